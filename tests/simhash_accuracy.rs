//! SimHash's Hamming distance estimates the angle between term-frequency vectors: each bit
//! differs with probability θ/π (Charikar 2002), so over many pairs at one exact cosine the
//! mean distance is 64·θ/π and every one of the 64 bit positions differs about θ/π of the time.
//! Checked through the whole text path (word:1 features, so each distinct word is one feature
//! and its repetitions are its weight), unkeyed (XXH3 bits) and keyed (SipHash-1-3 bits), on
//! pairs built with an exactly known cosine. Fixed seeds: deterministic, never flaky.
//!
//! Tolerances: over 300 pairs the mean distance has a standard deviation of
//! sqrt(64·p(1−p)/300) ≤ 0.23 bits, and a bit position's difference rate one of
//! sqrt(p(1−p)/300) ≤ 0.029; the assertions allow 0.7 bits and 0.12, over 4σ, and a bad feature
//! hash (weak or correlated bits) or a wrong sign rule misses them by far more.

mod common;

use mhdb::sketch::{SecretKey, ShingleConfig, SimHasher, SimParams};

use common::rng::SplitMix64;

/// Texts A and B over distinct words, A with features `0..n`, B sharing the first `shared`
/// of them (same weights) and having `n − shared` of its own; weights 1 to 3. Returns the
/// texts and their exact tf-cosine.
fn pair(rng: &mut SplitMix64, trial: usize, n: usize, shared: usize) -> (String, String, f64) {
    let weights: Vec<u64> = (0..2 * n - shared).map(|_| 1 + rng.below(3)).collect();
    let text = |features: &mut dyn Iterator<Item = usize>| -> String {
        let mut words = Vec::new();
        for f in features {
            for _ in 0..weights[f] {
                words.push(format!("t{trial}f{f}"));
            }
        }
        words.join(" ")
    };
    let a = text(&mut (0..n));
    let b = text(&mut (0..shared).chain(n..2 * n - shared));
    let sq = |fs: &mut dyn Iterator<Item = usize>| {
        fs.map(|f| (weights[f] * weights[f]) as f64).sum::<f64>()
    };
    let dot = sq(&mut (0..shared));
    let cos = dot / (sq(&mut (0..n)) * sq(&mut (0..shared).chain(n..2 * n - shared))).sqrt();
    (a, b, cos)
}

fn check(hasher: &SimHasher, what: &str) {
    let mut rng = SplitMix64(0x51_3A54);
    let trials = 300;
    for (n, shared) in [(400, 390), (400, 360), (400, 280)] {
        let mut distance_sum = 0u64;
        let mut cos_sum = 0f64;
        let mut per_bit = [0u32; 64];
        for trial in 0..trials {
            let (a, b, cos) = pair(&mut rng, trial, n, shared);
            let (fa, fb) = (hasher.sketch_text(&a), hasher.sketch_text(&b));
            distance_sum += u64::from(fa.hamming(fb));
            cos_sum += cos;
            let diff = fa.bits() ^ fb.bits();
            for (i, count) in per_bit.iter_mut().enumerate() {
                *count += (diff >> i & 1) as u32;
            }
        }
        let cos = cos_sum / trials as f64;
        let p = cos.acos() / std::f64::consts::PI;
        let mean = distance_sum as f64 / trials as f64;
        assert!(
            (mean - 64.0 * p).abs() < 0.7,
            "{what}, cosine {cos:.3}: mean distance {mean:.2}, theory {:.2}",
            64.0 * p
        );
        for (i, &count) in per_bit.iter().enumerate() {
            let rate = f64::from(count) / trials as f64;
            assert!(
                (rate - p).abs() < 0.12,
                "{what}, cosine {cos:.3}: bit {i} differs in {rate:.3} of pairs, theory {p:.3}"
            );
        }
    }
}

#[test]
fn hamming_distance_tracks_the_angle_unkeyed() {
    let params = SimParams {
        shingle: ShingleConfig::words(1),
        ..SimParams::default()
    };
    check(&SimHasher::new(params).unwrap(), "unkeyed");
}

#[test]
fn hamming_distance_tracks_the_angle_keyed() {
    let params = SimParams {
        shingle: ShingleConfig::words(1),
        ..SimParams::default()
    };
    let key = SecretKey::from_bytes([0x42; 32]);
    check(&SimHasher::new_keyed(params, &key).unwrap(), "keyed");
}
