//! The sketch and index parameters the tests build.

use mhdb::db::IndexParams;
use mhdb::sketch::{MinHasher, Scheme, ShingleConfig, SketchParams};

/// `scheme` with `num_perm` slots and `seed`, default shingling (character 5-grams).
pub fn sketch(scheme: Scheme, num_perm: usize, seed: u64) -> SketchParams {
    SketchParams {
        scheme,
        num_perm,
        seed,
        ..SketchParams::default()
    }
}

/// The hasher of [`sketch`]`(scheme, num_perm, seed)`.
pub fn hasher(scheme: Scheme, num_perm: usize, seed: u64) -> MinHasher {
    MinHasher::new(sketch(scheme, num_perm, seed)).unwrap()
}

/// The index of the database tests: OPH (seed 0) with `num_perm` slots over word 2-grams —
/// the tests' documents are a few dozen synthetic words, which gives them enough shingles —
/// stored at `bits` bits, with bands × rows tuned for `threshold`. Small, so that workloads
/// that reopen or crash the database hundreds of times stay fast.
pub fn word_index(num_perm: usize, bits: u32, threshold: f64) -> IndexParams {
    let sketch = SketchParams {
        shingle: ShingleConfig::words(2),
        ..sketch(Scheme::Oph, num_perm, 0)
    };
    IndexParams::for_threshold(sketch, bits, threshold).unwrap()
}

/// Four short texts, keyed `a` to `d`, none a near-duplicate of another: what the tests of
/// the per-document columns store.
pub const FOUR_TEXTS: [(&str, &str); 4] = [
    ("a", "the quick brown fox jumps over the lazy dog"),
    ("b", "a stitch in time saves nine, they said of old"),
    ("c", "all that glitters is not gold, nor all who wander"),
    ("d", "the early bird catches the worm but not the fox"),
];
