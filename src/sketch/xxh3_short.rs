//! Seeded XXH3-64 (spec §3) for the short inputs shingles are: a char 5-gram is 5 to 20
//! bytes. The per-seed constants are computed once per hasher and the per-input work inlines
//! into the shingle loop, where the general `xxh3_64_with_seed` is an out-of-line call that
//! re-derives them and dispatches on the length every time. Equal to `xxh3_64_with_seed` for
//! every input and seed (tests compare them on random inputs of every length up to 40).

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Little-endian words of XXH3's default secret (its first 64 bytes, in 8-byte steps).
const SECRET: [u64; 8] = [
    0xBE4B_A423_396C_FEB8,
    0x1CAD_21F7_2C81_017C,
    0xDB97_9083_E96D_D4DE,
    0x1F67_B3B7_A4A4_4072,
    0x78E5_C0CC_4EE6_79CB,
    0x2172_FFCC_7DD0_5A82,
    0x8E24_43F7_7446_08B8,
    0x4C26_3A81_E690_35E0,
];
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME_MX1: u64 = 0x1656_6791_9E37_79F9;
const PRIME_MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// XXH3-64 with one seed, for inputs of any length (fast up to 32 bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShortXxh3 {
    seed: u64,
    /// 4..=8 bytes: the one key word.
    flip_4to8: u64,
    /// 9..=16 bytes: the two key words.
    flip_9to16: [u64; 2],
    /// 17..=32 bytes: secret words 0..4 with the seed added to the even and taken from the odd.
    keys_17to32: [u64; 4],
}

impl ShortXxh3 {
    pub(crate) fn new(seed: u64) -> Self {
        let seed_4to8 = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
        let [s0, s1, s2, s3, s4, s5, s6, _] = SECRET;
        ShortXxh3 {
            seed,
            flip_4to8: (s1 ^ s2).wrapping_sub(seed_4to8),
            flip_9to16: [(s3 ^ s4).wrapping_add(seed), (s5 ^ s6).wrapping_sub(seed)],
            keys_17to32: [
                s0.wrapping_add(seed),
                s1.wrapping_sub(seed),
                s2.wrapping_add(seed),
                s3.wrapping_sub(seed),
            ],
        }
    }

    /// The hash of `input`.
    #[inline(always)]
    pub(crate) fn hash(&self, input: &[u8]) -> u64 {
        match input.len() {
            4..=8 => self.hash_4to8(input),
            9..=16 => self.hash_9to16(input),
            17..=32 => self.hash_17to32(input),
            _ => xxh3_64_with_seed(input, self.seed),
        }
    }

    /// The hash of an input of 4 to 8 bytes (anything else gives a wrong hash, never a panic).
    #[inline(always)]
    pub(crate) fn hash_4to8(&self, input: &[u8]) -> u64 {
        let len = input.len();
        let input64 = read32(input, len.wrapping_sub(4)).wrapping_add(read32(input, 0) << 32);
        mix_4to8_word(input64, self.flip_4to8, len as u64)
    }

    /// Calls `f` with the hash of every `n`-byte window of `bytes` (4 <= n <= 8), in order.
    ///
    /// The windows are hashed a block at a time, in loops over arrays with no dependency
    /// between lanes that the compiler vectorizes (AVX-512 has a 64-bit multiply), where
    /// hashing window by window runs each window's two dependent multiplies on the scalar
    /// unit: whole blocks by [`hash_window_block`]; the last, short block's input words are
    /// gathered one by one, then mixed by [`mix_4to8`].
    #[inline(always)]
    pub(crate) fn for_each_window_hash_4to8(&self, bytes: &[u8], n: usize, mut f: impl FnMut(u64)) {
        const BLOCK: usize = 64;
        if !(4..=8).contains(&n) || bytes.len() < n {
            return;
        }
        let windows = bytes.len() - n + 1;
        let mut words = [0u64; BLOCK];
        let mut start = 0;
        // Whole blocks whose windows' bytes are all there: read and mixed in one vector loop.
        while let Some(block) = bytes
            .get(start..)
            .and_then(|rest| rest.first_chunk::<{ BLOCK + 7 }>())
        {
            hash_window_block(block, n, self.flip_4to8, &mut words);
            for &h in &words {
                f(h);
            }
            start += BLOCK;
        }
        while start < windows {
            let count = (windows - start).min(BLOCK);
            let shift = 8 * (n as u32 - 4);
            for (j, w) in words.iter_mut().take(count).enumerate() {
                let at = start + j;
                // One 8-byte read holds both of the window's 4-byte words, but for the last
                // few windows.
                let (lo, hi) = match bytes.get(at..at + 8) {
                    Some(eight) => {
                        let x = read64(eight, 0);
                        ((x >> shift) & 0xFFFF_FFFF, x & 0xFFFF_FFFF)
                    }
                    None => (read32(bytes, at + n - 4), read32(bytes, at)),
                };
                *w = lo.wrapping_add(hi << 32);
            }
            mix_4to8(&mut words, self.flip_4to8, n as u64);
            for &h in words.iter().take(count) {
                f(h);
            }
            start += count;
        }
    }

    #[inline(always)]
    fn hash_9to16(&self, input: &[u8]) -> u64 {
        let len = input.len();
        let lo = read64(input, 0) ^ self.flip_9to16[0];
        let hi = read64(input, len.wrapping_sub(8)) ^ self.flip_9to16[1];
        let acc = (len as u64)
            .wrapping_add(lo.swap_bytes())
            .wrapping_add(hi)
            .wrapping_add(mul128_fold64(lo, hi));
        avalanche(acc)
    }

    #[inline(always)]
    fn hash_17to32(&self, input: &[u8]) -> u64 {
        let len = input.len();
        let [k0, k1, k2, k3] = self.keys_17to32;
        let tail = len.wrapping_sub(16);
        let acc = (len as u64)
            .wrapping_mul(PRIME64_1)
            .wrapping_add(mul128_fold64(read64(input, 0) ^ k0, read64(input, 8) ^ k1))
            .wrapping_add(mul128_fold64(
                read64(input, tail) ^ k2,
                read64(input, tail.wrapping_add(8)) ^ k3,
            ));
        avalanche(acc)
    }
}

/// XXH3's 4-8 byte mix (`hash_4to8` after its reads) of every word of `words`, in place.
/// `multiversion` compiles it for AVX-512 (where `vpmullq` multiplies 8 lanes), AVX2 and the
/// baseline; every version computes the same integers.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl",
    "x86_64+avx2",
    "aarch64+neon"
))]
fn mix_4to8(words: &mut [u64; 64], flip: u64, len: u64) {
    for w in words.iter_mut() {
        *w = mix_4to8_word(*w, flip, len);
    }
}

/// The XXH3 hashes of the 64 `n`-byte windows starting in the first 64 bytes of `bytes`
/// (4 <= n <= 8; a window's bytes end by byte 71), into `words`. A window's input word is
/// assembled from its bytes lane by lane, each byte column a contiguous load, so that the
/// whole block vectorizes (one 8-byte read per window, at every byte offset, does not).
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+avx512bw",
    "x86_64+avx2",
    "aarch64+neon"
))]
fn hash_window_block(bytes: &[u8; 71], n: usize, flip: u64, words: &mut [u64; 64]) {
    // The word is `read32(window, n - 4) + (read32(window, 0) << 32)` (XXH3's 4-8 path).
    let tail = n.clamp(4, 8) - 4;
    *words = [0; 64];
    for k in 0..4 {
        let (Some(high), Some(low)) = (bytes.get(k..k + 64), bytes.get(tail + k..tail + k + 64))
        else {
            return;
        };
        for ((w, &h), &l) in words.iter_mut().zip(high).zip(low) {
            *w |= (u64::from(h) << (32 + 8 * k)) | (u64::from(l) << (8 * k));
        }
    }
    for w in words.iter_mut() {
        *w = mix_4to8_word(*w, flip, n as u64);
    }
}

/// XXH3's 4-8 byte mix of one input word (`rrmxmx` after the key is applied), for an input
/// of `len` bytes: inlined into the loops above, which the compiler vectorizes.
#[inline(always)]
fn mix_4to8_word(word: u64, flip: u64, len: u64) -> u64 {
    let mut h = word ^ flip;
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(PRIME_MX2);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(PRIME_MX2);
    h ^ (h >> 28)
}

#[inline(always)]
fn read32(input: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    if let Some(src) = input.get(at..at.wrapping_add(4)) {
        b.copy_from_slice(src);
    }
    u64::from(u32::from_le_bytes(b))
}

#[inline(always)]
fn read64(input: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(src) = input.get(at..at.wrapping_add(8)) {
        b.copy_from_slice(src);
    }
    u64::from_le_bytes(b)
}

#[inline(always)]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME_MX1);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift generator: test inputs that differ from run to run of the seed only.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn equals_the_library_for_every_short_length() {
        let mut next = xorshift(0x1234_5678_9ABC_DEF0);
        let mut bytes = [0u8; 40];
        for round in 0..20_000 {
            for b in bytes.chunks_mut(8) {
                b.copy_from_slice(&next().to_le_bytes());
            }
            // Small seeds too: the 4..8 path mixes the seed's low half into its high half.
            let seed = if round % 4 == 0 { round } else { next() };
            let hasher = ShortXxh3::new(seed);
            for len in 0..=bytes.len() {
                let input = &bytes[..len];
                assert_eq!(
                    hasher.hash(input),
                    xxh3_64_with_seed(input, seed),
                    "len {len} seed {seed:#x}"
                );
            }
        }
    }

    /// Hashing the windows a block at a time gives, for every window width 4-8, every text
    /// length around the block size and the end-of-text reads, and any bytes (not only
    /// ASCII: each byte is widened on its own in the vector path), the library's hash of each
    /// window, in order; other widths and texts shorter than a window give nothing.
    #[test]
    fn window_hashes_equal_the_library_window_by_window() {
        let mut next = xorshift(0x0F1E_2D3C_4B5A_6978);
        let printable: Vec<u8> = (0..300).map(|_| (next() % 95 + 32) as u8).collect();
        let any: Vec<u8> = (0..300).map(|_| next() as u8).collect();
        for (seed, bytes) in [0, 1, 0xFFFF_FFFF, next(), next()]
            .into_iter()
            .flat_map(|seed| [(seed, &printable), (seed, &any)])
        {
            let hasher = ShortXxh3::new(seed);
            for n in 0..=10 {
                for len in (0..80).chain([
                    127, 128, 129, 130, 134, 135, 136, 191, 192, 193, 198, 199, 300,
                ]) {
                    let text = &bytes[..len];
                    let mut got = Vec::new();
                    hasher.for_each_window_hash_4to8(text, n, |h| got.push(h));
                    let want: Vec<u64> = if (4..=8).contains(&n) {
                        text.windows(n)
                            .map(|w| xxh3_64_with_seed(w, seed))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    assert_eq!(got, want, "n {n} len {len} seed {seed:#x}");
                }
            }
        }
    }
}
