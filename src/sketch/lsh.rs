//! LSH banding: choosing (bands, rows) for a threshold, the S-curve, and band keys.
//!
//! A pair with Jaccard s shares at least one band key with probability
//! `P(s) = 1 − (1 − s^r)^b`. [`tune`] picks (b, r) with `b·r ≤ k` that minimizes the weighted
//! false-positive mass `∫₀ᵗ P` plus false-negative mass `∫ₜ¹ (1 − P)`, among the choices that
//! make a pair exactly at the threshold a candidate with probability at least
//! `min_recall_at_threshold` (0.95 by default): LSH is the recall stage, and verification
//! against stored signatures restores precision.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::minhash::SketchParams;
use super::spec::{Purpose, derive_seed, mix64};
use crate::{Error, Result};

/// Bands × rows of an LSH index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LshParams {
    /// Number of bands b.
    pub bands: usize,
    /// Slots per band r.
    pub rows: usize,
}

impl LshParams {
    /// Checks `bands ≥ 1`, `rows ≥ 1` and `bands · rows ≤ num_perm`.
    pub fn new(bands: usize, rows: usize, num_perm: usize) -> Result<Self> {
        if bands == 0 || rows == 0 {
            return Err(Error::invalid(
                "bands/rows",
                format!("both must be at least 1, got {bands} bands × {rows} rows"),
            ));
        }
        if bands.saturating_mul(rows) > num_perm {
            return Err(Error::invalid(
                "bands/rows",
                format!(
                    "{bands} bands × {rows} rows = {} slots, but signatures have only {num_perm}",
                    bands.saturating_mul(rows)
                ),
            ));
        }
        Ok(LshParams { bands, rows })
    }

    /// Probability that a pair of Jaccard similarity `s` shares at least one band.
    pub fn probability(&self, s: f64) -> f64 {
        let s = s.clamp(0.0, 1.0);
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }

    /// `∫₀ᵗ P(s) ds`: how much of the S-curve lies below the threshold.
    pub fn false_positive_mass(&self, threshold: f64) -> f64 {
        integrate(|s| self.probability(s), 0.0, threshold)
    }

    /// `∫ₜ¹ (1 − P(s)) ds`: how much recall is missing above the threshold.
    pub fn false_negative_mass(&self, threshold: f64) -> f64 {
        integrate(|s| 1.0 - self.probability(s), threshold, 1.0)
    }

    /// The S-curve sampled at `points` similarities.
    pub fn curve(&self, points: &[f64]) -> Vec<(f64, f64)> {
        points.iter().map(|&s| (s, self.probability(s))).collect()
    }
}

/// Composite Simpson's rule; the S-curve is smooth, so 256 intervals are far more than enough.
fn integrate(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    const N: usize = 256;
    if b <= a {
        return 0.0;
    }
    let h = (b - a) / N as f64;
    let mut sum = f(a) + f(b);
    for i in 1..N {
        let weight = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += weight * f(a + i as f64 * h);
    }
    sum * h / 3.0
}

/// Weights and the recall floor used by [`tune`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuneOptions {
    /// Weight of the false-positive mass.
    pub false_positive_weight: f64,
    /// Weight of the false-negative mass.
    pub false_negative_weight: f64,
    /// Only choices with `P(threshold)` at least this are considered (if any exist).
    pub min_recall_at_threshold: f64,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            false_positive_weight: 0.5,
            false_negative_weight: 0.5,
            min_recall_at_threshold: 0.95,
        }
    }
}

/// One (bands, rows) choice and how it scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuning {
    /// The choice.
    pub params: LshParams,
    /// `∫₀ᵗ P`.
    pub false_positive: f64,
    /// `∫ₜ¹ (1 − P)`.
    pub false_negative: f64,
    /// `P(t)`.
    pub recall_at_threshold: f64,
    /// Weighted cost that [`tune`] minimizes.
    pub cost: f64,
    /// Whether `recall_at_threshold` reaches the requested floor.
    pub meets_recall_floor: bool,
}

pub(crate) fn validate_tune_inputs(
    threshold: f64,
    num_perm: usize,
    opts: &TuneOptions,
) -> Result<()> {
    // 1 is a threshold like any other (near-exact duplicates): every banding has P(1) = 1,
    // so the cheapest in false positives wins.
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Error::invalid(
            "threshold",
            format!("must be in (0, 1], got {threshold}"),
        ));
    }
    if num_perm == 0 {
        return Err(Error::invalid("num_perm", "must be at least 1"));
    }
    let weights_ok = [opts.false_positive_weight, opts.false_negative_weight]
        .iter()
        .all(|w| w.is_finite() && *w >= 0.0);
    if !weights_ok || opts.false_positive_weight + opts.false_negative_weight <= 0.0 {
        return Err(Error::invalid(
            "weights",
            "false-positive and false-negative weights must be finite, ≥ 0 and not both 0",
        ));
    }
    if !(0.0..=1.0).contains(&opts.min_recall_at_threshold) {
        return Err(Error::invalid(
            "min_recall_at_threshold",
            format!("must be in [0, 1], got {}", opts.min_recall_at_threshold),
        ));
    }
    Ok(())
}

/// Every (bands, rows) with `bands · rows ≤ num_perm`, scored and sorted best first: choices
/// meeting the recall floor by cost, then the rest by recall at the threshold.
pub fn tune_all(threshold: f64, num_perm: usize, opts: &TuneOptions) -> Result<Vec<Tuning>> {
    validate_tune_inputs(threshold, num_perm, opts)?;
    let mut all = Vec::new();
    for rows in 1..=num_perm {
        for bands in 1..=num_perm / rows {
            all.push(score(LshParams { bands, rows }, threshold, opts));
        }
    }
    all.sort_by(best_first);
    Ok(all)
}

/// How `params` scores at `threshold` under `opts`.
pub(crate) fn score(params: LshParams, threshold: f64, opts: &TuneOptions) -> Tuning {
    let false_positive = params.false_positive_mass(threshold);
    let false_negative = params.false_negative_mass(threshold);
    let recall_at_threshold = params.probability(threshold);
    Tuning {
        params,
        false_positive,
        false_negative,
        recall_at_threshold,
        cost: opts.false_positive_weight * false_positive
            + opts.false_negative_weight * false_negative,
        meets_recall_floor: recall_at_threshold >= opts.min_recall_at_threshold,
    }
}

/// The order of [`tune_all`]: choices meeting the recall floor by cost, then the rest by
/// recall at the threshold.
pub(crate) fn best_first(a: &Tuning, b: &Tuning) -> std::cmp::Ordering {
    b.meets_recall_floor
        .cmp(&a.meets_recall_floor)
        .then_with(|| {
            if a.meets_recall_floor {
                a.cost.total_cmp(&b.cost)
            } else {
                b.recall_at_threshold.total_cmp(&a.recall_at_threshold)
            }
        })
        // Fewer bands means smaller postings; then prefer longer bands (fewer candidates).
        .then_with(|| a.params.bands.cmp(&b.params.bands))
        .then_with(|| b.params.rows.cmp(&a.params.rows))
}

/// The best (bands, rows) for `threshold` with `num_perm` slots. If no choice reaches the
/// recall floor, the one with the highest recall at the threshold is returned
/// (`meets_recall_floor == false`).
pub fn tune(threshold: f64, num_perm: usize, opts: &TuneOptions) -> Result<Tuning> {
    tune_all(threshold, num_perm, opts)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid("num_perm", "no (bands, rows) choice exists"))
}

/// Computes band keys (spec §8) for one sketch configuration and one (bands, rows).
#[derive(Clone, Debug)]
pub struct Banding {
    params: LshParams,
    band_seeds: Vec<u64>,
}

impl Banding {
    /// Band keys for signatures made with `sketch`, cut into `lsh` bands.
    pub fn new(sketch: &SketchParams, lsh: LshParams) -> Result<Self> {
        sketch.validate()?;
        let lsh = LshParams::new(lsh.bands, lsh.rows, sketch.num_perm)?;
        let base = derive_seed(sketch.scheme, sketch.seed, Purpose::Band);
        Ok(Banding {
            params: lsh,
            band_seeds: (0..lsh.bands as u64)
                .map(|j| mix64(base.wrapping_add(j)))
                .collect(),
        })
    }

    /// The (bands, rows) in use.
    pub fn params(&self) -> LshParams {
        self.params
    }

    /// The key of band `band`: xxh3 of the band's r slots as little-endian u64s, seeded per band.
    /// Returns `None` when `band` is out of range or `slots` is too short.
    pub fn band_key(&self, slots: &[u64], band: usize) -> Option<u64> {
        let r = self.params.rows;
        let seed = *self.band_seeds.get(band)?;
        let band_slots = slots.get(band * r..band * r + r)?;
        Some(hash_slots(band_slots, seed))
    }

    /// Appends all `bands` keys of a full-precision signature to `out`.
    pub fn band_keys_into(&self, slots: &[u64], out: &mut Vec<u64>) -> Result<()> {
        let needed = self.params.bands * self.params.rows;
        if slots.len() < needed {
            return Err(Error::invalid(
                "signature",
                format!("has {} slots, bands need {needed}", slots.len()),
            ));
        }
        let r = self.params.rows;
        out.extend(
            slots
                .chunks_exact(r)
                .zip(&self.band_seeds)
                .map(|(band, &seed)| hash_slots(band, seed)),
        );
        Ok(())
    }

    /// Writes the `bands` keys of a full-precision signature into `out` (exactly `bands` long).
    pub fn band_keys_to_slice(&self, slots: &[u64], out: &mut [u64]) -> Result<()> {
        let needed = self.params.bands * self.params.rows;
        if slots.len() < needed || out.len() != self.params.bands {
            return Err(Error::invalid(
                "signature",
                format!(
                    "has {} slots for {} band keys, bands need {needed} slots",
                    slots.len(),
                    out.len()
                ),
            ));
        }
        let r = self.params.rows;
        for ((dst, band), &seed) in out
            .iter_mut()
            .zip(slots.chunks_exact(r))
            .zip(&self.band_seeds)
        {
            *dst = hash_slots(band, seed);
        }
        Ok(())
    }

    /// All band keys of a full-precision signature.
    pub fn band_keys(&self, slots: &[u64]) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.params.bands);
        self.band_keys_into(slots, &mut out)?;
        Ok(out)
    }
}

#[cfg(target_endian = "little")]
pub(crate) fn hash_slots(slots: &[u64], seed: u64) -> u64 {
    use zerocopy::IntoBytes;
    xxh3_64_with_seed(slots.as_bytes(), seed)
}

#[cfg(not(target_endian = "little"))]
pub(crate) fn hash_slots(slots: &[u64], seed: u64) -> u64 {
    let bytes: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();
    xxh3_64_with_seed(&bytes, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_endpoints_and_monotonicity() {
        let p = LshParams { bands: 20, rows: 5 };
        assert_eq!(p.probability(0.0), 0.0);
        assert_eq!(p.probability(1.0), 1.0);
        let c = p.curve(&[0.1, 0.3, 0.5, 0.7, 0.9]);
        assert!(c.windows(2).all(|w| w[0].1 < w[1].1));
    }

    #[test]
    fn integration_is_accurate() {
        // ∫₀¹ P(s) ds for b = 1, r = 2 is 1/3.
        let p = LshParams { bands: 1, rows: 2 };
        assert!((p.false_positive_mass(1.0) - 1.0 / 3.0).abs() < 1e-12);
        assert!((p.false_negative_mass(0.0) - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn default_tuning_meets_recall_floor() {
        for t in [0.5, 0.7, 0.8, 0.9, 0.95] {
            let tuning = tune(t, 128, &TuneOptions::default()).unwrap();
            assert!(tuning.meets_recall_floor, "t = {t}: {tuning:?}");
            assert!(tuning.recall_at_threshold >= 0.95);
            assert!(tuning.params.bands * tuning.params.rows <= 128);
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let o = TuneOptions::default();
        for t in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(tune(t, 128, &o).is_err(), "t = {t}");
        }
        // 1 is a threshold: every banding has P(1) = 1, so the fewest false positives win.
        let exact = tune(1.0, 128, &o).unwrap();
        assert_eq!((exact.params.bands, exact.params.rows), (1, 128));
        assert!(exact.meets_recall_floor);
        assert!(tune(0.5, 0, &o).is_err());
        assert!(LshParams::new(20, 7, 128).is_err());
        assert!(LshParams::new(0, 7, 128).is_err());
        let neg = TuneOptions {
            false_positive_weight: -1.0,
            ..o
        };
        assert!(tune(0.5, 128, &neg).is_err());
    }

    #[test]
    fn band_keys_depend_on_band_index_and_values() {
        let banding =
            Banding::new(&SketchParams::default(), LshParams::new(4, 2, 128).unwrap()).unwrap();
        let slots = vec![7u64; 128];
        let keys = banding.band_keys(&slots).unwrap();
        assert_eq!(keys.len(), 4);
        // Equal slot values in different bands still give different keys.
        assert_ne!(keys[0], keys[1]);
        let mut other = slots.clone();
        other[0] = 8;
        let keys2 = banding.band_keys(&other).unwrap();
        assert_ne!(keys[0], keys2[0]);
        assert_eq!(keys[1..], keys2[1..]);
        assert_eq!(banding.band_key(&slots, 3), Some(keys[3]));
        assert_eq!(banding.band_key(&slots, 4), None);
        assert!(banding.band_keys(&slots[..7]).is_err());
    }
}
