//! Measured band-collision rates follow the S-curve P(s) = 1 − (1 − s^r)^b, for both schemes;
//! tuning meets its recall floor over a grid of thresholds and sizes; and invalid LSH and
//! packing parameters are errors, never panics.

mod common;

use mhdb::sketch::{
    Banding, LshParams, MinHasher, Scheme, SketchParams, TuneOptions, pack, tune, validate_bits,
};

use common::rng::XorShift64;

#[test]
fn collision_rates_follow_the_s_curve() {
    const PAIRS: usize = 1000;
    const UNION: usize = 400;
    for scheme in [Scheme::Oph, Scheme::KPerm] {
        for (bands, rows) in [(16usize, 4usize), (8, 8), (20, 5), (32, 2)] {
            let sketch = common::params::sketch(scheme, bands * rows, 11);
            let hasher = MinHasher::new(sketch).unwrap();
            let banding =
                Banding::new(&sketch, LshParams::new(bands, rows, bands * rows).unwrap()).unwrap();
            for s in [0.3, 0.5, 0.7, 0.8, 0.9] {
                let inter = (s * UNION as f64).round() as usize;
                let exact = inter as f64 / UNION as f64;
                let mut hits = 0usize;
                for p in 0..PAIRS {
                    let seed = 0xABCD + (p as u64) * 1_000_003 + (s * 1000.0) as u64;
                    let e = XorShift64::new(seed).next_n(UNION);
                    let (a, b) = common::sets::overlapping(&e, inter);
                    let ka = banding.band_keys(hasher.sketch_hashes(&a).slots()).unwrap();
                    let kb = banding.band_keys(hasher.sketch_hashes(&b).slots()).unwrap();
                    if ka.iter().zip(&kb).any(|(x, y)| x == y) {
                        hits += 1;
                    }
                }
                let expected = banding.params().probability(exact);
                let sigma = (expected * (1.0 - expected) / PAIRS as f64).sqrt();
                let measured = hits as f64 / PAIRS as f64;
                assert!(
                    (measured - expected).abs() <= 4.0 * sigma + 0.01,
                    "{scheme} {bands}×{rows} s={exact}: measured {measured:.3}, S-curve {expected:.3}"
                );
            }
        }
    }
}

#[test]
fn tuning_meets_the_recall_floor() {
    for k in [16usize, 64, 128, 256] {
        for i in 0..14 {
            let t = 0.3 + 0.05 * i as f64;
            let tuning = tune(t, k, &TuneOptions::default()).unwrap();
            let p = tuning.params;
            assert!(p.bands * p.rows <= k);
            assert!(p.probability(t) >= 0.95, "k={k} t={t}: {p:?}");
            assert!((tuning.recall_at_threshold - p.probability(t)).abs() < 1e-12);
        }
    }
}

#[test]
fn invalid_parameters_are_errors() {
    let o = TuneOptions::default();
    assert!(tune(0.8, 0, &o).is_err());
    for t in [0.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
        assert!(tune(t, 128, &o).is_err(), "threshold {t}");
    }
    // Thresholds are in (0, 1]: 1 (near-exact duplicates) is one of them.
    assert_eq!(tune(1.0, 128, &o).unwrap().params.probability(1.0), 1.0);
    let bad = TuneOptions {
        false_negative_weight: -1.0,
        ..o
    };
    assert!(tune(0.8, 128, &bad).is_err());
    let zero = TuneOptions {
        false_positive_weight: 0.0,
        false_negative_weight: 0.0,
        ..o
    };
    assert!(tune(0.8, 128, &zero).is_err());
    assert!(LshParams::new(17, 8, 128).is_err());
    assert!(LshParams::new(0, 8, 128).is_err());
    assert!(LshParams::new(8, 0, 128).is_err());
    for bits in [0u32, 3, 5, 7, 12, 63, 65, 128] {
        assert!(validate_bits(bits).is_err(), "bits {bits}");
        assert!(pack(&[1, 2, 3], bits).is_err());
    }
    assert!(
        MinHasher::new(SketchParams {
            num_perm: 0,
            ..SketchParams::default()
        })
        .is_err()
    );
    let sketch = SketchParams::default();
    assert!(
        Banding::new(
            &sketch,
            LshParams {
                bands: 200,
                rows: 1
            }
        )
        .is_err()
    );
}
