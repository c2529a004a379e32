//! Per-band membership filters: a blocked Bloom filter over one band's key32 values, so that a
//! lookup of a key the band does not hold is answered from one cache line instead of a
//! directory slot and its entries. No false negatives; about 1 % false positives at the
//! default density. Pure encode, build and probe; no I/O (`format/segment.md`, BAND_FILTER).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::sketch::spec::mix64;

/// Filter kind code of a blocked Bloom filter (BAND_FILTER's `width_a`).
pub(crate) const KIND_BLOCKED_BLOOM: u32 = 1;

/// Bytes of one block: a cache line, so that every probe of a key reads one line.
pub(crate) const BLOCK_BYTES: usize = 64;

/// Bytes of the filter header: `seed u64, block_count u32, probes u32`, little-endian.
pub(crate) const HEADER_BYTES: usize = 16;

/// Bits per distinct key the writer spends: 10 gives about 1 % false positives with
/// [`PROBES`] probes of a 512-bit block.
pub(crate) const BITS_PER_KEY: usize = 10;

/// Probes per key the writer uses: one bit in each of the block's eight 64-bit words.
pub(crate) const PROBES: u32 = 8;

/// The most probes a filter may declare: two bits in each word.
const MAX_PROBES: u32 = 16;

/// The odd multiplier of probe `i`: probe `i` sets, in word `i mod 8` of the key's block, bit
/// `(lo · SALT[i]) >> 58` of the 64-bit product `lo · SALT[i]` (`lo` the low 32 bits of
/// the key's hash, zero-extended). Each is `mix64(i + 1) | 1`, computed once at build time
/// rather than per probe. (Indexing in a constant is checked when the crate compiles.)
#[allow(clippy::indexing_slicing)]
const SALTS: [u64; MAX_PROBES as usize] = {
    let mut salts = [0u64; MAX_PROBES as usize];
    let mut i = 0;
    while i < salts.len() {
        salts[i] = mix64(i as u64 + 1) | 1;
        i += 1;
    }
    salts
};

/// The bit of each of a block's eight words that the first eight probes set: with
/// [`PROBES`] = 8 (every filter this crate writes) these masks are the whole key. (A lookup
/// probes one at a time instead, to stop at the first clear bit.)
#[inline]
fn eight_masks(hash: u64) -> [u64; 8] {
    let lo = hash & 0xFFFF_FFFF;
    let mut masks = [0u64; 8];
    for (m, salt) in masks.iter_mut().zip(SALTS) {
        *m = 1u64 << (lo.wrapping_mul(salt) >> 58);
    }
    masks
}

/// The key's hash: the filter input of `format/segment.md`.
#[inline]
fn key_hash(key32: u32, seed: u64) -> u64 {
    mix64(u64::from(key32) ^ seed)
}

/// The block a hash falls in: the top 32 bits scaled to `block_count` (no division).
#[inline]
fn block_of(hash: u64, block_count: u32) -> usize {
    (((hash >> 32) * u64::from(block_count)) >> 32) as usize
}

/// `(word, bit mask)` of probe `i` of a key whose hash is `hash`.
#[inline]
fn probe(hash: u64, i: u32) -> (usize, u64) {
    let lo = hash & 0xFFFF_FFFF;
    let salt = SALTS
        .get(i as usize)
        .copied()
        .unwrap_or_else(|| mix64(u64::from(i) + 1) | 1);
    let bit = lo.wrapping_mul(salt) >> 58;
    ((i % 8) as usize, 1u64 << bit)
}

/// A filter's parameters, as its header stores them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FilterParams {
    pub seed: u64,
    pub block_count: u32,
    pub probes: u32,
}

impl FilterParams {
    /// The parameters a writer uses for `distinct_keys` keys of band `band`.
    pub(crate) fn for_keys(distinct_keys: usize, band: u32) -> Self {
        let bits = distinct_keys.saturating_mul(BITS_PER_KEY);
        let blocks = bits.div_ceil(BLOCK_BYTES * 8).max(1);
        FilterParams {
            seed: mix64(u64::from(band) ^ 0xB10F_F117_E500_0000),
            block_count: u32::try_from(blocks).unwrap_or(u32::MAX),
            probes: PROBES,
        }
    }

    /// Bytes of the filter's body after the header.
    pub(crate) fn body_len(&self) -> usize {
        self.block_count as usize * BLOCK_BYTES
    }
}

/// Builds the filter of the key32 values `keys` (repeats allowed): header then blocks.
pub(crate) fn build(keys: &[u32], params: FilterParams) -> Vec<u8> {
    let mut words = vec![0u64; params.block_count as usize * 8];
    for &k in keys {
        let h = key_hash(k, params.seed);
        let base = block_of(h, params.block_count) * 8;
        let Some(block) = words.get_mut(base..base + 8) else {
            continue;
        };
        if params.probes == PROBES {
            for (word, mask) in block.iter_mut().zip(eight_masks(h)) {
                *word |= mask;
            }
            continue;
        }
        for i in 0..params.probes {
            let (w, mask) = probe(h, i);
            if let Some(word) = block.get_mut(w) {
                *word |= mask;
            }
        }
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + words.len() * 8);
    out.extend_from_slice(&params.seed.to_le_bytes());
    out.extend_from_slice(&params.block_count.to_le_bytes());
    out.extend_from_slice(&params.probes.to_le_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// Why a filter's bytes cannot be read: the reader names the section and offset.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FilterError {
    /// Shorter than its header.
    Short,
    /// A block count of zero, or more probes than a block allows.
    BadParams,
    /// The body is not `block_count` blocks long.
    Length { want: usize, have: usize },
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterError::Short => {
                write!(f, "band filter shorter than its {HEADER_BYTES}-byte header")
            }
            FilterError::BadParams => write!(
                f,
                "band filter header: block count 0 or probes outside 1..={MAX_PROBES}"
            ),
            FilterError::Length { want, have } => {
                write!(
                    f,
                    "band filter body is {have} bytes, its header says {want}"
                )
            }
        }
    }
}

/// The parameters in a filter's header, checked against the body's length.
pub(crate) fn read_params(bytes: &[u8]) -> Result<FilterParams, FilterError> {
    let field = |at: usize, len: usize| bytes.get(at..at + len).ok_or(FilterError::Short);
    let seed = u64::from_le_bytes(field(0, 8)?.try_into().map_err(|_| FilterError::Short)?);
    let block_count = u32::from_le_bytes(field(8, 4)?.try_into().map_err(|_| FilterError::Short)?);
    let probes = u32::from_le_bytes(field(12, 4)?.try_into().map_err(|_| FilterError::Short)?);
    if block_count == 0 || probes == 0 || probes > MAX_PROBES {
        return Err(FilterError::BadParams);
    }
    let params = FilterParams {
        seed,
        block_count,
        probes,
    };
    let have = bytes.len() - HEADER_BYTES;
    if have != params.body_len() {
        return Err(FilterError::Length {
            want: params.body_len(),
            have,
        });
    }
    Ok(params)
}

/// The byte range, within the filter's bytes, of the block a lookup of `key32` reads (for the
/// reader to check that block's CRC before [`may_contain`]).
pub(crate) fn block_range(params: &FilterParams, key32: u32) -> (usize, usize) {
    let h = key_hash(key32, params.seed);
    let at = HEADER_BYTES + block_of(h, params.block_count) * BLOCK_BYTES;
    (at, at + BLOCK_BYTES)
}

/// Whether `key32` may be in the filter whose bytes are `bytes` and parameters `params` (from
/// [`read_params`] on the same bytes): false means the band holds no such key. A block out of
/// bounds (impossible after `read_params`) answers true: a filter never hides a key.
#[inline]
pub(crate) fn may_contain(bytes: &[u8], params: &FilterParams, key32: u32) -> bool {
    let h = key_hash(key32, params.seed);
    let at = HEADER_BYTES + block_of(h, params.block_count) * BLOCK_BYTES;
    let Some(block) = bytes.get(at..at + BLOCK_BYTES) else {
        return true;
    };
    if params.probes == PROBES {
        // Every word tested, without a branch per probe: a key the filter rules out stops at
        // a random probe, and the branch that stops there would mispredict about half the time.
        return block
            .chunks_exact(8)
            .zip(eight_masks(h))
            .fold(true, |all, (word, mask)| {
                let word = word.try_into().map_or(u64::MAX, u64::from_le_bytes);
                all & (word & mask != 0)
            });
    }
    (0..params.probes).all(|i| {
        let (w, mask) = probe(h, i);
        let word = block
            .get(w * 8..w * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(u64::MAX, u64::from_le_bytes);
        word & mask != 0
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::super::test_rng::next;
    use super::*;

    fn keys(n: usize, seed: u64) -> Vec<u32> {
        let mut s = seed;
        (0..n).map(|_| (next(&mut s) >> 32) as u32).collect()
    }

    #[test]
    fn every_inserted_key_is_reported_present() {
        for n in [0, 1, 7, 100, 10_000] {
            let ks = keys(n, n as u64 + 1);
            let params = FilterParams::for_keys(n, 3);
            let f = build(&ks, params);
            assert_eq!(read_params(&f), Ok(params));
            assert!(ks.iter().all(|&k| may_contain(&f, &params, k)), "n = {n}");
        }
    }

    /// At the writer's density the false-positive rate is near the 1 % the design expects
    /// (the keys are fixed, so the figure is too: this fails if probes stop being spread).
    #[test]
    fn absent_keys_are_mostly_reported_absent() {
        let n = 100_000;
        let ks = keys(n, 42);
        let params = FilterParams::for_keys(n, 0);
        let f = build(&ks, params);
        let present: std::collections::HashSet<u32> = ks.iter().copied().collect();
        let probes: Vec<u32> = keys(200_000, 7)
            .into_iter()
            .filter(|k| !present.contains(k))
            .collect();
        let fp = probes
            .iter()
            .filter(|&&k| may_contain(&f, &params, k))
            .count();
        let rate = fp as f64 / probes.len() as f64;
        assert!(rate < 0.015, "false-positive rate {rate}");
        assert!(
            rate > 0.0005,
            "false-positive rate {rate} is implausibly low"
        );
    }

    /// The eight-probe test, every word at once, answers as probing word by word and
    /// stopping at the first clear bit does (absent keys are the ones it short-cuts).
    #[test]
    fn all_words_at_once_answers_as_probe_by_probe() {
        let ks = keys(5_000, 3);
        let params = FilterParams::for_keys(ks.len(), 2);
        let f = build(&ks, params);
        let one_by_one = |key32: u32| {
            let h = key_hash(key32, params.seed);
            let at = HEADER_BYTES + block_of(h, params.block_count) * BLOCK_BYTES;
            (0..params.probes).all(|i| {
                let (w, mask) = probe(h, i);
                let word: [u8; 8] = f[at + w * 8..at + w * 8 + 8].try_into().unwrap();
                u64::from_le_bytes(word) & mask != 0
            })
        };
        let mut absent = 0;
        for k in keys(20_000, 9).into_iter().chain(ks.iter().copied()) {
            let want = one_by_one(k);
            assert_eq!(may_contain(&f, &params, k), want, "key {k}");
            absent += usize::from(!want);
        }
        assert!(absent > 15_000, "only {absent} keys ruled out");
    }

    #[test]
    fn a_key_reads_one_block() {
        let params = FilterParams::for_keys(1000, 1);
        let (from, to) = block_range(&params, 12345);
        assert_eq!(to - from, BLOCK_BYTES);
        assert!(from >= HEADER_BYTES && to <= HEADER_BYTES + params.body_len());
    }

    #[test]
    fn damaged_headers_are_refused_not_panicked_on() {
        let params = FilterParams::for_keys(100, 0);
        let f = build(&keys(100, 1), params);
        assert_eq!(read_params(&f[..10]), Err(FilterError::Short));
        assert!(matches!(
            read_params(&f[..f.len() - 1]),
            Err(FilterError::Length { .. })
        ));
        let mut zero_blocks = f.clone();
        zero_blocks[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(read_params(&zero_blocks), Err(FilterError::BadParams));
        let mut many_probes = f.clone();
        many_probes[12..16].copy_from_slice(&17u32.to_le_bytes());
        assert_eq!(read_params(&many_probes), Err(FilterError::BadParams));
        let mut huge = f;
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read_params(&huge),
            Err(FilterError::Length { .. })
        ));
    }
}
