//! The standard normal distribution's quantile function, to turn a wanted probability (a
//! recall at a threshold) into a number of standard errors.

/// Coefficients of P. J. Acklam's rational approximation of the normal quantile (relative error
/// below 1.2·10⁻⁹ over (0, 1)): the central region's numerator and denominator...
const CENTRAL_NUM: [f64; 6] = [
    -3.969_683_028_665_376e1,
    2.209_460_984_245_205e2,
    -2.759_285_104_469_687e2,
    1.383_577_518_672_69e2,
    -3.066_479_806_614_716e1,
    2.506_628_277_459_239,
];
const CENTRAL_DEN: [f64; 5] = [
    -5.447_609_879_822_406e1,
    1.615_858_368_580_409e2,
    -1.556_989_798_598_866e2,
    6.680_131_188_771_972e1,
    -1.328_068_155_288_572e1,
];
/// ...and the tails'.
const TAIL_NUM: [f64; 6] = [
    -7.784_894_002_430_293e-3,
    -3.223_964_580_411_365e-1,
    -2.400_758_277_161_838,
    -2.549_732_539_343_734,
    4.374_664_141_464_968,
    2.938_163_982_698_783,
];
const TAIL_DEN: [f64; 4] = [
    7.784_695_709_041_462e-3,
    3.224_671_290_700_398e-1,
    2.445_134_137_142_996,
    3.754_408_661_907_416,
];
/// Below this probability (and above one less it) the tail approximation is used.
const TAIL: f64 = 0.02425;

/// Horner's rule over `coefficients`, highest power first.
fn poly(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().fold(0.0, |acc, &c| acc * x + c)
}

/// The z with `Φ(z) = p` for the standard normal Φ, for `p` in (0, 1); exactly 0 at 0.5.
/// Infinite at 0 and 1, NaN outside [0, 1].
pub fn quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 || p == 1.0 {
        return if p == 0.0 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let tail = |p: f64| {
        let q = (-2.0 * p.ln()).sqrt();
        poly(&TAIL_NUM, q) / (poly(&TAIL_DEN, q) * q + 1.0)
    };
    if p < TAIL {
        tail(p)
    } else if p > 1.0 - TAIL {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        poly(&CENTRAL_NUM, r) * q / (poly(&CENTRAL_DEN, r) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn matches_tabulated_quantiles() {
        // Φ⁻¹ from standard tables, to 7 digits.
        for (p, z) in [
            (0.5, 0.0),
            (0.841_344_746, 1.0),
            (0.9, 1.281_551_6),
            (0.95, 1.644_853_6),
            (0.975, 1.959_964_0),
            (0.99, 2.326_347_9),
            (0.999_968_328_758_166_9, 4.0),
            (0.001, -3.090_232_3),
        ] {
            assert!(
                (quantile(p) - z).abs() < 1e-6,
                "Φ⁻¹({p}) = {} not {z}",
                quantile(p)
            );
            assert!((quantile(1.0 - p) + z).abs() < 1e-6, "symmetry at {p}");
        }
        assert_eq!(quantile(0.5), 0.0);
        assert!(quantile(1.5).is_nan() && quantile(-0.1).is_nan());
        assert_eq!(quantile(1.0), f64::INFINITY);
    }

    #[test]
    fn is_increasing() {
        let zs: Vec<f64> = (1..1000).map(|i| quantile(i as f64 / 1000.0)).collect();
        assert!(zs.windows(2).all(|w| w[0] < w[1]));
    }
}
