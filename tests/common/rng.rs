//! Deterministic generators, so that every test draws the same numbers on every run and a
//! failure reproduces from its seed.
//!
//! Two algorithms, because the tests were written against both: changing a test's generator
//! or seed changes the numbers it draws, which can flip a tolerance-based assertion in the
//! statistical tests (estimator accuracy, S-curve, densification) and changes the workloads
//! of the others. New tests should use [`SplitMix64`].

/// SplitMix64 (Steele, Lea and Flood 2014): any seed, including 0, gives a good stream.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (with the slight modulo bias, which the tests do not mind).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Marsaglia's xorshift64 with shifts 13, 7, 17. Every output is the new state, so the
/// stream from seed `x` starts with the step from `x`, not with `x` itself.
pub struct XorShift64(u64);

impl XorShift64 {
    /// The seed is the initial state, which must not be 0 (zero is a fixed point).
    pub fn new(seed: u64) -> Self {
        assert_ne!(seed, 0, "xorshift64 stays at 0 forever");
        XorShift64(seed)
    }

    /// A state derived from any `seed` (0 included): `seed` times the golden-ratio constant,
    /// with the low bit set so that the state is never 0.
    pub fn scrambled(seed: u64) -> Self {
        XorShift64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (with the slight modulo bias, which the tests do not mind).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// The next `n` numbers.
    pub fn next_n(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.next_u64()).collect()
    }
}

/// A word of a skewed vocabulary (a few common words, many rare ones) of 2 to 9 letters: text
/// whose shingle sets overlap as prose's do.
pub fn skewed_word(rng: &mut SplitMix64) -> String {
    let spread = 1 + rng.below(20_000);
    let rank = rng.below(spread);
    let mut state = SplitMix64(rank);
    let len = 2 + state.below(8) as usize;
    (0..len)
        .map(|_| (b'a' + state.below(26) as u8) as char)
        .collect()
}

/// `n` words of [`skewed_word`].
pub fn skewed_words(rng: &mut SplitMix64, n: usize) -> Vec<String> {
    (0..n).map(|_| skewed_word(rng)).collect()
}

/// A run of 1/8 to all of `page`'s words (at least 20), at a random place; with `edit`, about
/// a tenth of its words replaced.
pub fn passage(rng: &mut SplitMix64, page: &[String], edit: bool) -> Vec<String> {
    let len = (page.len() / (1 + rng.below(8) as usize)).max(20);
    let start = rng.below((page.len() - len + 1) as u64) as usize;
    let mut part = page[start..start + len].to_vec();
    if edit {
        for w in part.iter_mut() {
            if rng.below(10) == 0 {
                *w = skewed_word(rng);
            }
        }
    }
    part
}
