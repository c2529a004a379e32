//! One-permutation hashing with optimal densification leaves no slot empty, even for sets of
//! one, two or ten shingles, copies only real bin values, and stays accurate on small sets;
//! the empty set alone keeps the all-EMPTY signature.

mod common;

use mhdb::sketch::{EMPTY_SLOT, MinHasher, Scheme, ShingleConfig, SketchParams};

use common::params::hasher;
use common::rng::XorShift64;

#[test]
fn no_empty_slot_for_tiny_sets() {
    for k in [1usize, 7, 128, 1024] {
        for n in [1usize, 2, 10] {
            let set = XorShift64::new(0xDEAD_BEEF + n as u64).next_n(n);
            let sig = hasher(Scheme::Oph, k, 3).sketch_hashes(&set);
            assert!(sig.slots().iter().all(|&s| s != EMPTY_SLOT), "k={k} n={n}");
            assert!(
                sig.slots().iter().all(|s| set.contains(s)),
                "k={k} n={n}: foreign value"
            );
            if n == 1 {
                assert!(sig.slots().iter().all(|&s| s == set[0]));
            }
        }
    }
}

#[test]
fn short_texts_fill_every_slot() {
    let h = MinHasher::new(SketchParams {
        shingle: ShingleConfig::chars(5),
        ..SketchParams::default()
    })
    .unwrap();
    for text in ["a", "ab", "abc", "hello world"] {
        let sig = h.sketch_text(text);
        assert!(sig.slots().iter().all(|&s| s != EMPTY_SLOT), "{text:?}");
    }
    for scheme in [Scheme::Oph, Scheme::KPerm] {
        let h = MinHasher::new(SketchParams {
            scheme,
            ..SketchParams::default()
        })
        .unwrap();
        assert!(h.sketch_text("").slots().iter().all(|&s| s == EMPTY_SLOT));
        assert!(h.sketch_text(" \n\t ").is_empty_set());
    }
}

#[test]
fn small_sets_stay_accurate() {
    const K: usize = 128;
    const TRIALS: usize = 400;
    for (union, inter) in [(20usize, 10usize), (20, 16), (50, 25), (50, 40)] {
        let truth = inter as f64 / union as f64;
        let mut ests = Vec::new();
        for t in 0..TRIALS {
            let elems = XorShift64::new(0x5151 + t as u64 * 31).next_n(union);
            let (a, b) = common::sets::overlapping(&elems, inter);
            let h = hasher(Scheme::Oph, K, t as u64);
            ests.push(h.sketch_hashes(&a).jaccard(&h.sketch_hashes(&b)).unwrap());
        }
        let n = ests.len() as f64;
        let mean = ests.iter().sum::<f64>() / n;
        let var = ests.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = (var / n).sqrt();
        assert!(
            (mean - truth).abs() <= 3.0 * se + 1e-9,
            "|A∪B|={union} J={truth}: mean {mean:.4}, 3 SE {:.4}",
            3.0 * se
        );
        // Densification must not blow the variance up far beyond k-slot MinHash.
        assert!(
            var < 3.0 * truth * (1.0 - truth) / K as f64 + 1e-4,
            "variance {var}"
        );
    }
}
