//! Containment search by LSH Ensemble (Zhu, Nargesian, Pu, Miller, PVLDB 2016): size classes,
//! the Jaccard threshold a containment threshold implies for a class, the (bands, rows) to
//! probe a class with, and containment estimated from a Jaccard estimate and two set sizes.
//!
//! `format/containment.md` is the description of everything computed here. The functions are
//! pure: the index that stores set sizes and class-seeded band keys calls them.

use super::lsh::{LshParams, TuneOptions, Tuning, best_first, score, validate_tune_inputs};
use super::spec::mix64;
use crate::{Error, Result};

/// The largest class: that of a set of 2⁶⁴ − 1 elements.
pub const MAX_CLASS: u8 = 128;

/// The bandings a containment index stores by default, as (most bands, rows): every document
/// gets all of them, and a query uses a prefix of one per class.
pub const DEFAULT_BANDINGS: [LshParams; 5] = [
    LshParams { bands: 64, rows: 1 },
    LshParams { bands: 32, rows: 2 },
    LshParams { bands: 24, rows: 3 },
    LshParams { bands: 16, rows: 5 },
    LshParams { bands: 12, rows: 8 },
];

/// The size class of a set of `set_size` distinct elements: 0 for the empty set, else
/// `1 + 2·⌊log₂ s⌋ + (1 if s² ≥ 2^(2⌊log₂ s⌋+1))`, half octaves decided in integers so that
/// every implementation agrees at every boundary. Depends on the document alone, so inserting
/// documents one by one and building them at once give the same classes.
pub fn size_class(set_size: u64) -> u8 {
    if set_size == 0 {
        return 0;
    }
    let e = 63 - set_size.leading_zeros();
    let s = u128::from(set_size);
    let upper_half = s * s >= 1u128 << (2 * e + 1);
    (1 + 2 * e + u32::from(upper_half)) as u8
}

/// The bit of `set_size`'s class in a set of classes held as a `u128` (classes above 127,
/// of sizes beyond 2⁶³, share bit 127).
pub fn class_bit(set_size: u64) -> u128 {
    1u128 << size_class(set_size).min(127)
}

/// The smallest set size of `class` (0 for class 0; `u64::MAX` past [`MAX_CLASS`]).
pub fn class_lower_bound(class: u8) -> u64 {
    match class {
        0 => 0,
        c if c > MAX_CLASS => u64::MAX,
        c => {
            let e = u32::from(c - 1) / 2;
            if (c - 1) % 2 == 0 {
                1u64 << e
            } else {
                ceil_sqrt_pow2(2 * e + 1)
            }
        }
    }
}

/// The largest set size of `class` (0 for class 0; `u64::MAX` from [`MAX_CLASS`] on).
pub fn class_upper_bound(class: u8) -> u64 {
    if class >= MAX_CLASS {
        return u64::MAX;
    }
    class_lower_bound(class + 1) - 1
}

/// `⌈√(2^p)⌉` for p ≤ 127, exact.
fn ceil_sqrt_pow2(p: u32) -> u64 {
    let n = 1u128 << p;
    let root = n.isqrt();
    let ceil = if root * root == n { root } else { root + 1 };
    ceil as u64
}

/// The Jaccard threshold that containment `containment_t` implies for a query of
/// `query_size` elements and any set of at most `class_upper` elements:
/// `t·q / (q + u − t·q)`, clamped to `[0, 1]`. Every set X with `|X| ≤ class_upper` and
/// `|Q ∩ X| / |Q| ≥ t` has Jaccard at least this, because Jaccard falls as |X| grows.
pub fn jaccard_threshold_for(containment_t: f64, query_size: u64, class_upper: u64) -> f64 {
    if query_size == 0 {
        return 0.0;
    }
    let q = query_size as f64;
    let shared = containment_t.clamp(0.0, 1.0) * q;
    let union = q + class_upper as f64 - shared;
    if union <= 0.0 {
        return 1.0;
    }
    (shared / union).clamp(0.0, 1.0)
}

/// Containment `|Q ∩ X| / |Q|` from a Jaccard estimate and the two set sizes:
/// `|Q ∩ X| = J·(q + x) / (1 + J)`, so `ĉ = Ĵ·(q + x) / (q·(1 + Ĵ))`, clamped to
/// `[0, min(1, x/q)]` (X cannot hold more of Q than it has elements). 0 for an empty query.
pub fn estimate_containment(j_hat: f64, q: u64, x: u64) -> f64 {
    if q == 0 || j_hat.is_nan() {
        return 0.0;
    }
    let j = j_hat.clamp(0.0, 1.0);
    let (qf, xf) = (q as f64, x as f64);
    let estimate = j * (qf + xf) / (qf * (1.0 + j));
    estimate.clamp(0.0, (xf / qf).min(1.0))
}

/// Standard errors by which an estimate must fall short of the threshold before the exact
/// containment is not computed: one true match in about 30,000 is lost this way
/// ([`surely_below`]).
pub const EXACT_WINDOW_SIGMAS: f64 = 4.0;

/// The Jaccard estimate `sigmas` standard errors below the Jaccard that containment `t` implies
/// for sets of `q` and `x` elements, `J_t = t·q / (q + x − t·q)`, over `k` slots of `bits`
/// bits (negative `sigmas`: above it). The standard error is that of the matching fraction
/// `p = J_t·(1 − 2^−b) + 2^−b` of `k` slots, `√(p(1 − p)/k) / (1 − 2^−b)`, at the threshold,
/// with `k` at most the union's size (which fills no more slots). −∞ for an empty query or no
/// slots: every estimate is above it.
pub fn jaccard_floor(q: u64, x: u64, t: f64, k: usize, bits: u32, sigmas: f64) -> f64 {
    if q == 0 || k == 0 {
        return f64::NEG_INFINITY;
    }
    let (qf, xf) = (q as f64, x as f64);
    let shared = t * qf;
    let j_t = (shared / (qf + xf - shared).max(shared)).clamp(0.0, 1.0);
    if sigmas == 0.0 {
        return j_t;
    }
    let floor = 0.5f64.powi(bits.min(64) as i32);
    let p = j_t * (1.0 - floor) + floor;
    // A union of fewer elements than slots fills only that many: the others are copies.
    let slots = (k as f64).min(qf + xf - shared).max(1.0);
    let se = (p * (1.0 - p) / slots).sqrt() / (1.0 - floor);
    j_t - sigmas * se
}

/// True when a b-bit Jaccard estimate `j_hat` (over `k` slots of `bits` bits) between sets of
/// `q` and `x` elements lies more than [`EXACT_WINDOW_SIGMAS`] standard errors below the
/// Jaccard that containment `t` implies for those sizes ([`jaccard_floor`]): the test, at the
/// threshold, that lets an index with stored sets skip the exact containment of a candidate
/// that cannot plausibly reach it.
pub fn surely_below(j_hat: f64, q: u64, x: u64, t: f64, k: usize, bits: u32) -> bool {
    j_hat < jaccard_floor(q, x, t, k, bits, EXACT_WINDOW_SIGMAS)
}

/// How a containment query decided by estimate weighs the estimate's error at the threshold:
/// a document holding exactly the threshold's share of the query is kept with probability
/// about `recall` (the estimate is about normal there, `format/containment.md` §4). At 0.5, the
/// default, a document is kept when its estimate reaches the threshold. Above, the documents
/// whose estimate falls short by less than `Φ⁻¹(recall)` standard errors are kept too: more of
/// the true matches, and more false ones. Below, only those whose estimate exceeds it by as
/// much: fewer false matches, fewer true ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateRule {
    /// Standard errors of slack below the threshold (negative: margin above it).
    sigmas: f64,
}

impl Default for EstimateRule {
    fn default() -> Self {
        EstimateRule { sigmas: 0.0 }
    }
}

impl EstimateRule {
    /// The rule keeping a document at the threshold with probability about `recall`, in (0, 1).
    pub fn for_recall(recall: f64) -> Result<EstimateRule> {
        if !(recall > 0.0 && recall < 1.0) {
            return Err(Error::invalid(
                "recall",
                format!(
                    "must be in (0, 1) (0.5: the estimate reaches the threshold), got {recall}"
                ),
            ));
        }
        Ok(EstimateRule {
            sigmas: super::normal::quantile(recall),
        })
    }

    /// The lowest Jaccard estimate at which this rule may keep a document of `x` elements at
    /// containment threshold `t` for a query of `q` (`k` slots of `bits` bits).
    pub fn gate(&self, q: u64, x: u64, t: f64, k: usize, bits: u32) -> f64 {
        jaccard_floor(q, x, t, k, bits, self.sigmas.max(0.0))
    }

    /// Whether a document of `x` elements whose Jaccard estimate with the query (of `q`) is
    /// `j_hat`, and containment estimate `c_hat` ([`estimate_containment`]), is kept at `t`.
    pub fn keeps(
        &self,
        j_hat: f64,
        c_hat: f64,
        (q, x): (u64, u64),
        t: f64,
        k: usize,
        bits: u32,
    ) -> bool {
        let reaches = c_hat >= t;
        if self.sigmas == 0.0 {
            return reaches;
        }
        let within = j_hat >= jaccard_floor(q, x, t, k, bits, self.sigmas);
        if self.sigmas > 0.0 {
            reaches || within
        } else {
            reaches && within
        }
    }
}

/// The best (bands, rows) for Jaccard threshold `jaccard_t` among prefixes of the `stored`
/// bandings (rows as stored, at most the stored bands), ranked as [`super::lsh::tune_all`]
/// ranks: lowest weighted false-positive plus false-negative mass among the choices meeting
/// the recall floor, else the highest recall at the threshold.
pub fn choose_banding(jaccard_t: f64, stored: &[LshParams], opts: &TuneOptions) -> Result<Tuning> {
    validate_tune_inputs(jaccard_t, 1, opts)?;
    stored
        .iter()
        .flat_map(|s| {
            (1..=s.bands).map(move |bands| LshParams {
                bands,
                rows: s.rows,
            })
        })
        .map(|params| score(params, jaccard_t, opts))
        .min_by(best_first)
        .ok_or_else(|| Error::invalid("bandings", "a containment index stores at least one"))
}

/// One class a containment query probes, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassProbe {
    /// The size class.
    pub class: u8,
    /// The Jaccard threshold the containment threshold implies for the class's largest set.
    pub jaccard_threshold: f64,
    /// The bands (a prefix of one stored banding) and rows to look up.
    pub tuning: Tuning,
}

/// The probes of a query of `query_size` elements at containment `containment_t` over the
/// `populated` classes: every class whose largest set can hold `t·q` of the query's elements
/// (a smaller set cannot reach containment t).
pub fn plan_probes(
    containment_t: f64,
    query_size: u64,
    populated: impl IntoIterator<Item = u8>,
    stored: &[LshParams],
    opts: &TuneOptions,
) -> Result<Vec<ClassProbe>> {
    plan_probes_by(containment_t, query_size, populated, |j| {
        choose_banding(j, stored, opts)
    })
}

/// [`plan_probes`] with `choose` picking the (bands, rows) for a class's Jaccard threshold.
pub fn plan_probes_by(
    containment_t: f64,
    query_size: u64,
    populated: impl IntoIterator<Item = u8>,
    choose: impl Fn(f64) -> Result<Tuning>,
) -> Result<Vec<ClassProbe>> {
    if !(containment_t > 0.0 && containment_t <= 1.0) {
        return Err(Error::invalid(
            "containment threshold",
            format!("must be in (0, 1], got {containment_t}"),
        ));
    }
    // Less a hair, so that rounding never drops a class whose largest set holds exactly t·q.
    let needed = containment_t * query_size as f64 - 1e-9;
    populated
        .into_iter()
        .filter(|&class| query_size > 0 && class_upper_bound(class) as f64 >= needed)
        .map(|class| {
            let upper = class_upper_bound(class);
            let jaccard_threshold = jaccard_threshold_for(containment_t, query_size, upper);
            Ok(ClassProbe {
                class,
                jaccard_threshold,
                tuning: choose(jaccard_threshold)?,
            })
        })
        .collect()
}

/// The seed of band `band` of banding `banding` for a document of `class`:
/// `mix64(class_base + (class << 32 | banding << 16 | band))`, where `class_base` is
/// `derive(scheme, seed, "class")`. Distinct triples give distinct seeds (`mix64` is a
/// bijection), so the keys of one class never meet another's.
pub fn class_band_seed(class_base: u64, class: u8, banding: u16, band: u16) -> u64 {
    let slot = (u64::from(class) << 32) | (u64::from(banding) << 16) | u64::from(band);
    mix64(class_base.wrapping_add(slot))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sketch::bbit::{estimate_packed, pack};
    use crate::sketch::minhash::{MinHasher, SketchParams};
    use crate::sketch::spec::SplitMix64;

    const SLOTS: usize = 512;
    const BITS: u32 = 4;

    #[test]
    fn classes_are_half_octaves() {
        let expect = [
            (0, 0),
            (1, 1),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 5),
            (6, 6),
            (7, 6),
            (8, 7),
        ];
        for (size, class) in expect {
            assert_eq!(size_class(size), class, "size {size}");
        }
        // ⌈√2·1024⌉ = 1449 starts the upper half of the octave [1024, 2048).
        assert_eq!(size_class(1448), 21);
        assert_eq!(size_class(1449), 22);
        assert_eq!(size_class(u64::from(u32::MAX)), 64);
        assert_eq!(size_class(u64::MAX), MAX_CLASS);
        assert_eq!((class_lower_bound(22), class_upper_bound(22)), (1449, 2047));
        assert_eq!(class_upper_bound(21), 1448);
        assert_eq!(class_upper_bound(0), 0);
        // No integer lies in [√2, 2).
        assert!(class_lower_bound(2) > class_upper_bound(2));
        assert_eq!(class_upper_bound(MAX_CLASS), u64::MAX);
    }

    #[test]
    fn class_bounds_agree_with_the_class_of_every_boundary() {
        for class in 3..MAX_CLASS {
            let (lo, hi) = (class_lower_bound(class), class_upper_bound(class));
            assert!(lo <= hi, "class {class}");
            assert_eq!(size_class(lo), class, "lower bound of {class}");
            assert_eq!(size_class(hi), class, "upper bound of {class}");
            assert_eq!(size_class(lo - 1), class - 1 - u8::from(class == 3));
        }
    }

    #[test]
    fn estimator_is_exact_when_the_estimate_is_and_clamps() {
        assert_eq!(estimate_containment(1.0, 1000, 1000), 1.0);
        // q = 100 inside x = 800: J = 1/8, containment 1.
        assert!((estimate_containment(0.125, 100, 800) - 1.0).abs() < 1e-12);
        // Half of q = 400 inside x = 400: |∩| = 200, J = 200 / 600.
        assert!((estimate_containment(1.0 / 3.0, 400, 400) - 0.5).abs() < 1e-12);
        // A set of 50 holds at most 50 of a query's 100 elements.
        assert_eq!(estimate_containment(1.0, 100, 50), 0.5);
        assert_eq!(estimate_containment(0.0, 100, 50), 0.0);
        assert_eq!(estimate_containment(-0.2, 100, 50), 0.0);
        assert_eq!(estimate_containment(1.7, 100, 500), 1.0);
        assert_eq!(estimate_containment(0.5, 0, 500), 0.0);
        assert_eq!(estimate_containment(f64::NAN, 10, 500), 0.0);
    }

    #[test]
    fn thresholds_and_bandings_follow_the_class() {
        // q = 1000 and t = 0.7 against a class ending at 2047: 700 / 2347.
        let j = jaccard_threshold_for(0.7, 1000, 2047);
        assert!((j - 700.0 / 2347.0).abs() < 1e-12);
        // Sets of size t·q at most: the threshold is t itself.
        assert!((jaccard_threshold_for(0.8, 1000, 800) - 0.8).abs() < 1e-12);
        assert_eq!(jaccard_threshold_for(0.9, 1000, 100), 1.0);
        let opts = TuneOptions::default();
        let low = choose_banding(0.1, &DEFAULT_BANDINGS, &opts).unwrap();
        assert_eq!(low.params, LshParams { bands: 29, rows: 1 });
        let mid = choose_banding(0.5, &DEFAULT_BANDINGS, &opts).unwrap();
        assert_eq!(mid.params, LshParams { bands: 23, rows: 3 });
        // Below every banding's reach: the highest recall, 64 one-row bands.
        let floor = choose_banding(0.03, &DEFAULT_BANDINGS, &opts).unwrap();
        assert_eq!(floor.params, LshParams { bands: 64, rows: 1 });
        assert!(!floor.meets_recall_floor);
        assert!(choose_banding(0.5, &[], &opts).is_err());
        assert!(choose_banding(0.0, &DEFAULT_BANDINGS, &opts).is_err());
    }

    #[test]
    fn probes_skip_classes_too_small_to_contain_the_query() {
        let opts = TuneOptions::default();
        let probes = plan_probes(0.5, 1000, 0..=40, &DEFAULT_BANDINGS, &opts).unwrap();
        // Class 18 holds 363..=511, the first to reach t·q = 500; class 17 ends at 362.
        assert_eq!(probes.first().map(|p| p.class), Some(18));
        assert_eq!(probes.len(), 40 - 18 + 1);
        assert!(
            probes
                .windows(2)
                .all(|w| w[0].jaccard_threshold > w[1].jaccard_threshold)
        );
        assert!(plan_probes(0.0, 1000, 0..=40, &DEFAULT_BANDINGS, &opts).is_err());
        assert!(
            plan_probes(0.5, 0, 0..=40, &DEFAULT_BANDINGS, &opts)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn band_seeds_are_distinct_per_class_banding_and_band() {
        let mut seen = std::collections::HashSet::new();
        for class in [0u8, 1, 64, 128] {
            for banding in 0u16..5 {
                for band in 0u16..64 {
                    assert!(seen.insert(class_band_seed(7, class, banding, band)));
                }
            }
        }
    }

    /// A host of `x` random elements and a query of `q` elements, `inside` of them the
    /// host's: their b-bit Jaccard estimate and exact containment.
    fn sketched_pair(x: usize, q: usize, inside: usize, seed: u64) -> (f64, f64) {
        let mut rng = SplitMix64::new(seed);
        let host: Vec<u64> = (0..x).map(|_| rng.next_u64()).collect();
        let mut query: Vec<u64> = host[..inside].to_vec();
        query.extend((inside..q).map(|_| rng.next_u64()));
        let hasher = MinHasher::new(SketchParams {
            num_perm: SLOTS,
            ..SketchParams::default()
        })
        .unwrap();
        let packed = |set: &[u64]| pack(hasher.sketch_hashes(set).slots(), BITS).unwrap();
        let j_hat = estimate_packed(&packed(&query), &packed(&host), SLOTS, BITS).unwrap();
        (j_hat, inside as f64 / q as f64)
    }

    /// The standard deviation of ĉ (format/containment.md §4) at containment `c`, `x/q = ratio`.
    fn estimate_sd(c: f64, ratio: f64) -> f64 {
        let chance = (-f64::from(BITS)).exp2();
        let j = c / (1.0 + ratio - c);
        let p = j + (1.0 - j) * chance;
        let sd_j = (p * (1.0 - p) / SLOTS as f64).sqrt() / (1.0 - chance);
        (1.0 + ratio) / (1.0 + j).powi(2) * sd_j
    }

    #[test]
    fn mean_error_is_bounded_for_queries_at_least_an_eighth_of_the_host() {
        for (ratio, bound) in [(1usize, 0.03), (2, 0.05), (4, 0.08), (8, 0.13)] {
            let mut total = 0.0;
            let trials = 40;
            for trial in 0..trials {
                let q = 600 + 20 * trial;
                let inside = q * (3 + trial % 8) / 10;
                let (j_hat, exact) = sketched_pair(ratio * q, q, inside.min(q), trial as u64);
                total += (estimate_containment(j_hat, q as u64, (ratio * q) as u64) - exact).abs();
            }
            let mean = total / trials as f64;
            assert!(mean <= bound, "x/q = {ratio}: mean error {mean}");
        }
    }

    #[test]
    fn pairs_far_below_the_threshold_are_mostly_surely_below_it() {
        let mut skipped = 0;
        for trial in 0..100u64 {
            let q = 300 + 10 * trial as usize;
            let ratio = 1 + trial as usize % 4;
            let (j_hat, _) = sketched_pair(ratio * q, q, q / 5, trial);
            skipped += usize::from(surely_below(
                j_hat,
                q as u64,
                (ratio * q) as u64,
                0.7,
                SLOTS,
                BITS,
            ));
        }
        assert!(skipped >= 95, "{skipped} of 100 at containment 0.2 skipped");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn estimate_is_within_six_deviations(
            q in 512usize..1500, ratio in 1usize..=8, tenths in 0usize..=10, seed: u64,
        ) {
            let inside = q * tenths / 10;
            let (j_hat, exact) = sketched_pair(ratio * q, q, inside, seed);
            let estimate = estimate_containment(j_hat, q as u64, (ratio * q) as u64);
            // At containment 0 the clamp at Ĵ = 0 cuts the error's distribution in half.
            let allowed = 6.0 * estimate_sd(exact.max(0.05), ratio as f64) + 0.02;
            prop_assert!((estimate - exact).abs() <= allowed,
                "q {} x/q {} c {} ĉ {}", q, ratio, exact, estimate);
        }

        #[test]
        fn a_pair_at_the_threshold_or_above_is_never_surely_below_it(
            q in 20usize..1500, ratio in 1usize..=40, over in 0usize..=10, seed: u64,
        ) {
            let t = 0.7;
            let inside = ((q as f64 * (t + (1.0 - t) * over as f64 / 10.0)).ceil() as usize).min(q);
            let (j_hat, exact) = sketched_pair(ratio * q, q, inside, seed);
            prop_assert!(exact >= t);
            prop_assert!(!surely_below(j_hat, q as u64, (ratio * q) as u64, t, SLOTS, BITS),
                "q {} x/q {} c {} Ĵ {}", q, ratio, exact, j_hat);
        }

        #[test]
        fn estimate_is_monotone_in_the_jaccard_estimate(
            a in 0.0f64..=1.0, b in 0.0f64..=1.0, q in 1u64..100_000, x in 1u64..1_000_000,
        ) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (c_lo, c_hi) = (estimate_containment(lo, q, x), estimate_containment(hi, q, x));
            prop_assert!(c_lo <= c_hi);
            prop_assert!((0.0..=1.0).contains(&c_lo) && (0.0..=1.0).contains(&c_hi));
        }

        #[test]
        fn class_is_monotone_and_bounded(a: u64, b: u64) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(size_class(lo) <= size_class(hi));
            let class = size_class(a);
            prop_assert!((class_lower_bound(class)..=class_upper_bound(class)).contains(&a));
        }

        #[test]
        fn threshold_is_a_lower_bound_on_jaccard_in_the_class(
            t in 0.05f64..=1.0, q in 1u64..50_000, class in 1u8..40, pick in 0.0f64..=1.0,
        ) {
            let (lo, hi) = (class_lower_bound(class), class_upper_bound(class));
            prop_assume!(lo <= hi);
            let x = lo + ((hi - lo) as f64 * pick) as u64;
            // The smallest intersection with containment ≥ t, if X can hold it.
            let shared = (t * q as f64).ceil() as u64;
            prop_assume!(shared <= x.min(q));
            let jaccard = shared as f64 / (q + x - shared) as f64;
            prop_assert!(jaccard + 1e-12 >= jaccard_threshold_for(t, q, hi));
        }
    }
}
