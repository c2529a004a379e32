//! SimHash (Charikar 2002): a 64-bit fingerprint of a weighted feature set whose Hamming
//! distance estimates the angle between the feature vectors, and its pigeonhole index keys.
//!
//! Features are the shingles of `format/hashing.md` §3 weighted by term frequency; bit i of
//! the fingerprint is set when the shingle occurrences whose hash has bit i set outnumber
//! those whose hash has it clear. Two texts at angle θ differ in each bit with probability
//! θ/π, so `d ≈ 64·θ/π` and `cos(π·d/64)` estimates their cosine. For a maximum distance h,
//! the 64 bits are cut into h + 1 blocks: two fingerprints within h bits agree on at least one
//! whole block (pigeonhole), so one exact-match key per block finds every such pair.
//! `format/hashing.md` §13 is the spec.

use std::cell::RefCell;

use multiversion::multiversion;
use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::keyed::{KeyFingerprint, SecretKey, ShingleHash};
use super::minhash::Signature;
use super::shingle::ShingleConfig;
use super::spec::{Purpose, derive_named_seed, mix64};
use crate::{Error, Result};

/// The name SimHash seeds derive from (`mhdb-spec-1/simhash/<purpose>`).
const NAME: &str = "simhash";

/// Bits in a fingerprint.
pub const SIMHASH_BITS: u32 = 64;

/// The largest maximum Hamming distance accepted: 16 blocks of 4 bits. Beyond that a block
/// value is shared by an eighth of any corpus or more, and a block key selects nothing.
pub const MAX_HAMMING: u32 = 15;

/// How a feature's weight follows from its term frequency tf (spec §13.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SimWeighting {
    /// w = tf: every shingle occurrence counts once (the default; streams, no counting).
    #[default]
    Tf,
    /// w = 1 + ⌊log2 tf⌋ (the bit length of tf): sublinear, so that one shingle repeated
    /// many times (a table rule, a refrain) cannot decide the fingerprint alone.
    LogTf,
}

impl SimWeighting {
    /// The name used in the spec and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SimWeighting::Tf => "tf",
            SimWeighting::LogTf => "logtf",
        }
    }

    /// The one-byte code for storage: 1 = tf, 2 = logtf.
    pub fn code(self) -> u8 {
        match self {
            SimWeighting::Tf => 1,
            SimWeighting::LogTf => 2,
        }
    }

    /// Inverse of [`SimWeighting::code`].
    pub fn from_code(code: u8) -> Option<Self> {
        [SimWeighting::Tf, SimWeighting::LogTf]
            .into_iter()
            .find(|w| w.code() == code)
    }
}

impl std::fmt::Display for SimWeighting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SimWeighting {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "tf" => Ok(SimWeighting::Tf),
            "logtf" => Ok(SimWeighting::LogTf),
            _ => Err(Error::invalid(
                "weighting",
                format!("unknown weighting {s:?}; expected \"tf\" or \"logtf\""),
            )),
        }
    }
}

/// Everything that determines a fingerprint and its block keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SimParams {
    /// User seed; the shingle hash and block-key seeds derive from it.
    pub seed: u64,
    /// Normalization and shingling (the features).
    pub shingle: ShingleConfig,
    /// How term frequencies become weights.
    pub weighting: SimWeighting,
    /// The largest Hamming distance a match may have (h); the fingerprint is cut into h + 1
    /// blocks.
    pub max_hamming: u32,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            seed: 0,
            shingle: ShingleConfig::default(),
            weighting: SimWeighting::Tf,
            max_hamming: 3,
        }
    }
}

impl SimParams {
    /// Checks every field; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.max_hamming > MAX_HAMMING {
            return Err(Error::invalid(
                "max_hamming",
                format!(
                    "must be in 0..={MAX_HAMMING} (h + 1 blocks of at least 4 bits), got {}",
                    self.max_hamming
                ),
            ));
        }
        self.shingle.validate()
    }

    /// Number of pigeonhole blocks, h + 1.
    pub fn block_count(&self) -> usize {
        self.max_hamming as usize + 1
    }
}

/// A 64-bit SimHash fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SimHash(pub u64);

impl SimHash {
    /// The 64 bits.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Number of differing bits.
    pub fn hamming(self, other: SimHash) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// The cosine estimate `cos(π·d/64)` for the Hamming distance d to `other`.
    pub fn cosine_estimate(self, other: SimHash) -> f64 {
        cosine_from_hamming(self.hamming(other))
    }

    /// The fingerprint as a signature of 64 one-bit slots (slot i = bit i): how a SimHash
    /// index takes and stores it (packed at one bit per slot, the record is the fingerprint as
    /// a little-endian u64, and equal slots are equal bits).
    pub fn to_signature(self) -> Signature {
        Signature::from_slots(
            (0..SIMHASH_BITS)
                .map(|i| (self.0 >> i) & 1)
                .collect::<Vec<_>>(),
        )
    }

    /// Inverse of [`SimHash::to_signature`]; an error names what else `sig` is (e.g. a MinHash
    /// signature given to a SimHash index).
    pub fn from_signature(sig: &Signature) -> Result<SimHash> {
        let slots = sig.slots();
        if slots.len() != SIMHASH_BITS as usize || slots.iter().any(|&s| s > 1) {
            return Err(Error::invalid(
                "signature",
                format!(
                    "a SimHash index takes a 64-bit fingerprint (64 one-bit slots, \
                     SimHash::to_signature); this is a {}-slot signature{}",
                    slots.len(),
                    if slots.iter().any(|&s| s > 1) {
                        " with multi-bit slots (a MinHash signature?)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(SimHash(
            slots
                .iter()
                .enumerate()
                .fold(0u64, |fp, (i, &bit)| fp | (bit << i)),
        ))
    }
}

/// `cos(π·d/64)`: the cosine of the angle that `d` differing bits of 64 estimate.
pub fn cosine_from_hamming(d: u32) -> f64 {
    (std::f64::consts::PI * f64::from(d.min(SIMHASH_BITS)) / f64::from(SIMHASH_BITS)).cos()
}

/// One pigeonhole block: bits `start .. start + len` of the fingerprint (bit 0 is the least
/// significant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// First bit.
    pub start: u32,
    /// Number of bits.
    pub len: u32,
}

impl Block {
    /// The block's bits of `fp`, shifted down to bit 0.
    pub fn value(self, fp: SimHash) -> u64 {
        let shifted = fp.0 >> self.start;
        if self.len >= 64 {
            shifted
        } else {
            shifted & ((1u64 << self.len) - 1)
        }
    }
}

/// The h + 1 blocks: 64 = q·(h+1) + r bits, the first r blocks of q + 1 bits, the rest of q.
fn blocks(count: usize) -> Vec<Block> {
    let count = count as u32;
    let (q, r) = (SIMHASH_BITS / count, SIMHASH_BITS % count);
    let mut start = 0;
    (0..count)
        .map(|j| {
            let len = q + u32::from(j < r);
            let block = Block { start, len };
            start += len;
            block
        })
        .collect()
}

/// Computes fingerprints and block keys for one [`SimParams`]. Cheap to share across threads.
#[derive(Clone, Debug)]
pub struct SimHasher {
    params: SimParams,
    shingle_hash: ShingleHash,
    key_fingerprint: KeyFingerprint,
    blocks: Vec<Block>,
    block_seeds: Vec<u64>,
}

thread_local! {
    /// Per-thread scratch: the normalized text.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Per-thread scratch: the shingle hashes of one text, to count (log-tf weighting).
    static HASHES: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl SimHasher {
    /// Builds an unkeyed hasher (public seeded XXH3 shingle hashes).
    pub fn new(params: SimParams) -> Result<Self> {
        params.validate()?;
        let base = derive_named_seed(NAME, params.seed, Purpose::Band);
        let count = params.block_count();
        Ok(SimHasher {
            params,
            shingle_hash: derive_named_seed(NAME, params.seed, Purpose::Shingle).into(),
            key_fingerprint: KeyFingerprint::UNKEYED,
            blocks: blocks(count),
            block_seeds: (0..count as u64)
                .map(|j| mix64(base.wrapping_add(j)))
                .collect(),
        })
    }

    /// A hasher whose shingle hash is keyed by `key` (spec §12).
    pub fn new_keyed(params: SimParams, key: &SecretKey) -> Result<Self> {
        let mut hasher = Self::new(params)?;
        hasher.shingle_hash = key.shingle_hash(NAME, params.seed);
        hasher.key_fingerprint = key.fingerprint();
        Ok(hasher)
    }

    /// [`SimHasher::new_keyed`] with a key, [`SimHasher::new`] without.
    pub fn with_key(params: SimParams, key: Option<&SecretKey>) -> Result<Self> {
        match key {
            Some(key) => Self::new_keyed(params, key),
            None => Self::new(params),
        }
    }

    /// The parameters this hasher was built with.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// How shingles are hashed: seeded XXH3, or keyed SipHash-1-3.
    pub fn shingle_hash(&self) -> ShingleHash {
        self.shingle_hash
    }

    /// The fingerprint of the key ([`KeyFingerprint::UNKEYED`] for none).
    pub fn key_fingerprint(&self) -> KeyFingerprint {
        self.key_fingerprint
    }

    /// The largest Hamming distance a match may have.
    pub fn max_hamming(&self) -> u32 {
        self.params.max_hamming
    }

    /// The h + 1 pigeonhole blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Normalizes `text` and returns its shingle (feature) hashes in text order, duplicates
    /// kept: each occurrence is one unit of term frequency.
    pub fn shingle_hashes(&self, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        self.for_each_shingle_hash(text, |h| out.push(h));
        out
    }

    fn for_each_shingle_hash(&self, text: &str, f: impl FnMut(u64)) {
        // Take the buffer so that `f` may itself sketch (re-entrancy).
        let mut normalized = SCRATCH.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
        self.params
            .shingle
            .normalize_to_bytes(text, &mut normalized);
        self.params
            .shingle
            .for_each_shingle_hash_in(&normalized, self.shingle_hash, f);
        SCRATCH.with(|cell| *cell.borrow_mut() = normalized);
    }

    /// The fingerprint of `text`. A text with no shingles (empty after normalization) has
    /// fingerprint 0.
    pub fn sketch_text(&self, text: &str) -> SimHash {
        match self.params.weighting {
            SimWeighting::Tf => {
                let mut counter = BitCounter::default();
                let mut chunk = [0u64; COUNT_CHUNK];
                let mut len = 0;
                self.for_each_shingle_hash(text, |h| {
                    if let Some(slot) = chunk.get_mut(len) {
                        *slot = h;
                        len += 1;
                    }
                    if len == COUNT_CHUNK {
                        counter.add_all(&chunk);
                        len = 0;
                    }
                });
                counter.add_all(&chunk[..len]);
                counter.finish()
            }
            SimWeighting::LogTf => {
                // Take the buffer so that a re-entrant call finds its own (empty) one.
                let mut hashes = HASHES.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
                hashes.clear();
                self.for_each_shingle_hash(text, |h| hashes.push(h));
                let fp = log_tf_fingerprint(&mut hashes);
                HASHES.with(|cell| *cell.borrow_mut() = hashes);
                fp
            }
        }
    }

    /// The fingerprint of the multiset of shingle hashes `hashes` (in any order): each
    /// distinct hash is a feature whose term frequency is its number of occurrences.
    pub fn sketch_hashes(&self, hashes: &[u64]) -> SimHash {
        match self.params.weighting {
            SimWeighting::Tf => {
                let mut counter = BitCounter::default();
                counter.add_all(hashes);
                counter.finish()
            }
            SimWeighting::LogTf => log_tf_fingerprint(&mut hashes.to_vec()),
        }
    }

    /// The fingerprint of features with caller-chosen integer weights (e.g. tf·idf): bit i is
    /// set when the weights of the features whose hash has bit i set add up to more than half
    /// of all weight (spec §13.2). A feature listed twice counts with both weights, so
    /// [`SimHasher::sketch_hashes`] is the case of weight 1 per occurrence.
    pub fn sketch_weighted(&self, features: &[(u64, u64)]) -> SimHash {
        let mut ones = [0u128; 64];
        let mut total = 0u128;
        for &(h, w) in features {
            total += u128::from(w);
            for (i, sum) in ones.iter_mut().enumerate() {
                *sum += u128::from(w) * u128::from((h >> i) & 1);
            }
        }
        let fp = ones
            .iter()
            .enumerate()
            .filter(|&(_, &sum)| 2 * sum > total)
            .fold(0u64, |fp, (i, _)| fp | (1u64 << i));
        SimHash(fp)
    }

    /// The fingerprints of many texts, in order, on every core.
    pub fn sketch_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<SimHash> {
        texts
            .par_iter()
            .map(|t| self.sketch_text(t.as_ref()))
            .collect()
    }

    /// The key of block `j` of `fp` (spec §13.3), or `None` past the last block.
    pub fn block_key(&self, fp: SimHash, j: usize) -> Option<u64> {
        let block = self.blocks.get(j)?;
        let seed = self.block_seeds.get(j)?;
        Some(xxh3_64_with_seed(&block.value(fp).to_le_bytes(), *seed))
    }

    /// Writes the h + 1 block keys of `fp` into `out` (exactly h + 1 long).
    pub fn block_keys_to_slice(&self, fp: SimHash, out: &mut [u64]) -> Result<()> {
        if out.len() != self.blocks.len() {
            return Err(Error::invalid(
                "block keys",
                format!(
                    "room for {} keys, but fingerprints have {} blocks",
                    out.len(),
                    self.blocks.len()
                ),
            ));
        }
        for ((dst, block), seed) in out.iter_mut().zip(&self.blocks).zip(&self.block_seeds) {
            *dst = xxh3_64_with_seed(&block.value(fp).to_le_bytes(), *seed);
        }
        Ok(())
    }

    /// The h + 1 block keys of `fp`, in block order.
    pub fn block_keys(&self, fp: SimHash) -> Vec<u64> {
        let mut out = vec![0; self.blocks.len()];
        // The buffer has exactly one slot per block, so this cannot fail.
        let _ = self.block_keys_to_slice(fp, &mut out);
        out
    }

    /// The distance between two fingerprints when it is at most h (a match), else `None`.
    pub fn verify(&self, a: SimHash, b: SimHash) -> Option<u32> {
        let d = a.hamming(b);
        (d <= self.params.max_hamming).then_some(d)
    }
}

/// The log-tf fingerprint of shingle-hash occurrences (sorted in place to count them).
fn log_tf_fingerprint(hashes: &mut [u64]) -> SimHash {
    hashes.sort_unstable();
    let mut counter = BitCounter::default();
    // Most features occur once (weight 1): those go through the fast counter in chunks.
    let mut singles = [0u64; COUNT_CHUNK];
    let mut len = 0;
    for run in hashes.chunk_by(|a, b| a == b) {
        match run {
            [h] => {
                if let Some(slot) = singles.get_mut(len) {
                    *slot = *h;
                    len += 1;
                }
                if len == COUNT_CHUNK {
                    counter.add_all(&singles);
                    len = 0;
                }
            }
            [h, ..] => {
                let tf = run.len() as u64;
                counter.add_weighted(*h, u64::from(u64::BITS - tf.leading_zeros()));
            }
            [] => {}
        }
    }
    counter.add_all(&singles[..len]);
    counter.finish()
}

/// Hashes are counted in chunks of at most this many: a byte lane of [`count_bits`] then
/// cannot overflow.
const COUNT_CHUNK: usize = 255;

/// Per-bit weight of set bits over a stream of hashes, and the total weight.
struct BitCounter {
    ones: [u64; 64],
    total: u64,
}

impl Default for BitCounter {
    fn default() -> Self {
        BitCounter {
            ones: [0; 64],
            total: 0,
        }
    }
}

impl BitCounter {
    /// Adds hashes of weight 1 each.
    fn add_all(&mut self, hashes: &[u64]) {
        count_bits(&mut self.ones, hashes);
        self.total += hashes.len() as u64;
    }

    /// Adds one hash of weight `w`.
    fn add_weighted(&mut self, h: u64, w: u64) {
        for (i, ones) in self.ones.iter_mut().enumerate() {
            *ones += w * ((h >> i) & 1);
        }
        self.total += w;
    }

    /// Bit i is set when the hashes with bit i set carry more than half of the weight.
    fn finish(self) -> SimHash {
        let fp = self
            .ones
            .iter()
            .enumerate()
            .filter(|&(_, &ones)| 2 * ones > self.total)
            .fold(0u64, |fp, (i, _)| fp | (1u64 << i));
        SimHash(fp)
    }
}

/// Adds to `ones[i]` the number of `hashes` with bit i set. Eight
/// counters share one u64 as byte lanes: lane word k, byte j counts bit 8j + k, so adding a
/// hash is eight shift-mask-adds with no table and no data-dependent branch, which the AVX2
/// version does four words at a time. Flushed to `ones` every [`COUNT_CHUNK`] hashes.
#[multiversion(targets("x86_64+avx2", "aarch64+neon"))]
fn count_bits(ones: &mut [u64; 64], hashes: &[u64]) {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    for chunk in hashes.chunks(COUNT_CHUNK) {
        let mut lanes = [0u64; 8];
        for &h in chunk {
            for (k, lane) in lanes.iter_mut().enumerate() {
                *lane += (h >> k) & LOW_BITS;
            }
        }
        for (k, lane) in lanes.iter().enumerate() {
            for (j, count) in lane.to_le_bytes().into_iter().enumerate() {
                if let Some(total) = ones.get_mut(8 * j + k) {
                    *total += u64::from(count);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one bit at a time.
    fn naive(hashes: &[u64]) -> u64 {
        let mut fp = 0u64;
        for i in 0..64 {
            let v: i64 = hashes
                .iter()
                .map(|h| if h >> i & 1 == 1 { 1 } else { -1 })
                .sum();
            if v > 0 {
                fp |= 1 << i;
            }
        }
        fp
    }

    #[test]
    fn counter_equals_the_definition() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let hasher = SimHasher::new(SimParams::default()).unwrap();
        // Around the 255-hash flush and with skewed bits (ties included: even counts).
        for len in [0usize, 1, 2, 254, 255, 256, 510, 511, 1000, 3001] {
            let hashes: Vec<u64> = (0..len)
                .map(|i| if i % 3 == 0 { next() & next() } else { next() })
                .collect();
            assert_eq!(hasher.sketch_hashes(&hashes).0, naive(&hashes), "len {len}");
        }
        assert_eq!(hasher.sketch_hashes(&[5, !5]).0, 0, "ties give 0");
        // Weights: w copies of a hash weigh as much as one feature of weight w.
        let hashes: Vec<u64> = (0..300).map(|_| next()).collect();
        let weighted: Vec<(u64, u64)> = hashes.iter().map(|&h| (h, 1 + h % 4)).collect();
        let repeated: Vec<u64> = weighted
            .iter()
            .flat_map(|&(h, w)| std::iter::repeat_n(h, w as usize))
            .collect();
        assert_eq!(
            hasher.sketch_weighted(&weighted),
            hasher.sketch_hashes(&repeated)
        );
        assert_eq!(hasher.sketch_weighted(&[]), SimHash(0));
        // Log-tf: a hash occurring tf times weighs the bit length of tf.
        let log_tf = SimHasher::new(SimParams {
            weighting: SimWeighting::LogTf,
            ..SimParams::default()
        })
        .unwrap();
        let occurrences: Vec<u64> = weighted
            .iter()
            .flat_map(|&(h, w)| std::iter::repeat_n(h, (1usize << w) - 1))
            .rev()
            .collect();
        assert_eq!(
            log_tf.sketch_hashes(&occurrences),
            hasher.sketch_weighted(&weighted)
        );
        let text = "ab ab ab ab ab ab ab cd ef";
        assert_eq!(
            log_tf.sketch_text(text),
            log_tf.sketch_hashes(&log_tf.shingle_hashes(text))
        );
        let heavy = [(0xF0F0u64, 10), (0x0F0F, 3), (0x00FF, 3)];
        assert_eq!(hasher.sketch_weighted(&heavy).0, 0xF0F0);
    }

    #[test]
    fn blocks_cover_64_bits() {
        for h in 0..=MAX_HAMMING {
            let bs = blocks(h as usize + 1);
            assert_eq!(bs.len(), h as usize + 1);
            assert_eq!(bs[0].start, 0);
            for w in bs.windows(2) {
                assert_eq!(w[0].start + w[0].len, w[1].start);
                assert!(w[0].len >= w[1].len && w[0].len - w[1].len <= 1);
            }
            let last = bs[bs.len() - 1];
            assert_eq!(last.start + last.len, 64);
        }
        assert_eq!(blocks(1)[0].value(SimHash(u64::MAX)), u64::MAX);
        let five = blocks(5);
        assert_eq!(
            five.iter().map(|b| b.len).collect::<Vec<_>>(),
            [13, 13, 13, 13, 12]
        );
        assert_eq!(five[4].value(SimHash(u64::MAX)), (1 << 12) - 1);
    }

    /// Pigeonhole: any two fingerprints within h bits share a block key; the converse need
    /// not hold, but fingerprints differing in every block share none.
    #[test]
    fn within_h_bits_always_shares_a_block_key() {
        let mut x = 0x0123_4567_89AB_CDEFu64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for h in [0u32, 1, 3, 4, 7, 15] {
            let hasher = SimHasher::new(SimParams {
                max_hamming: h,
                ..SimParams::default()
            })
            .unwrap();
            for _ in 0..2_000 {
                let a = SimHash(next());
                let mut b = a.0;
                let flips = (next() % (u64::from(h) + 1)) as u32;
                for _ in 0..flips {
                    b ^= 1 << (next() % 64);
                }
                let b = SimHash(b);
                assert!(a.hamming(b) <= h);
                let (ka, kb) = (hasher.block_keys(a), hasher.block_keys(b));
                assert!(
                    ka.iter().zip(&kb).any(|(x, y)| x == y),
                    "h {h}: {a:?} {b:?}"
                );
                assert!(hasher.verify(a, b).is_some());
            }
            // One flipped bit in every block: h + 1 bits apart, no key in common.
            let a = SimHash(next());
            let b = SimHash(
                hasher
                    .blocks()
                    .iter()
                    .fold(a.0, |fp, block| fp ^ (1 << block.start)),
            );
            let (ka, kb) = (hasher.block_keys(a), hasher.block_keys(b));
            assert!(ka.iter().zip(&kb).all(|(x, y)| x != y));
            assert_eq!(hasher.verify(a, b), None);
        }
    }

    #[test]
    fn equal_block_values_in_different_blocks_give_different_keys() {
        let hasher = SimHasher::new(SimParams::default()).unwrap();
        let keys = hasher.block_keys(SimHash(0));
        assert_eq!(keys.len(), 4);
        for i in 0..4 {
            for j in 0..i {
                assert_ne!(keys[i], keys[j]);
            }
        }
        assert_eq!(hasher.block_key(SimHash(0), 3), Some(keys[3]));
        assert_eq!(hasher.block_key(SimHash(0), 4), None);
        assert!(hasher.block_keys_to_slice(SimHash(0), &mut [0; 3]).is_err());
    }

    #[test]
    fn cosine_estimate_endpoints() {
        assert_eq!(cosine_from_hamming(0), 1.0);
        assert!(cosine_from_hamming(32).abs() < 1e-12);
        assert_eq!(cosine_from_hamming(64), -1.0);
        assert!(
            (SimHash(0).cosine_estimate(SimHash(0b111))
                - (3.0 * std::f64::consts::PI / 64.0).cos())
            .abs()
                < 1e-15
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        let err = SimHasher::new(SimParams {
            max_hamming: 16,
            ..SimParams::default()
        })
        .unwrap_err();
        assert!(err.to_string().contains("max_hamming"), "{err}");
        assert!(
            SimHasher::new(SimParams {
                shingle: ShingleConfig::chars(0),
                ..SimParams::default()
            })
            .is_err()
        );
    }

    #[test]
    fn similar_texts_are_close_and_keys_matter() {
        let hasher = SimHasher::new(SimParams::default()).unwrap();
        let a = "the lighthouse keeper climbed the stairs every evening to light the lamp \
                 and watch the ships pass the rocks beneath the cliffs";
        let b = a.replace("evening", "night");
        let c = "a completely different text about baking bread with flour, water and salt \
                 in a wood fired oven until the crust is brown";
        let (fa, fb, fc) = (
            hasher.sketch_text(a),
            hasher.sketch_text(&b),
            hasher.sketch_text(c),
        );
        assert!(
            fa.hamming(fb) < fa.hamming(fc),
            "{} vs {}",
            fa.hamming(fb),
            fa.hamming(fc)
        );
        assert_eq!(hasher.sketch_text(""), SimHash(0));
        assert_eq!(
            hasher.sketch_text(a),
            hasher.sketch_hashes(&hasher.shingle_hashes(a))
        );
        let key = SecretKey::from_bytes([7; 32]);
        let keyed = SimHasher::new_keyed(SimParams::default(), &key).unwrap();
        assert_ne!(keyed.sketch_text(a), fa);
        assert_eq!(keyed.key_fingerprint(), key.fingerprint());
        assert!(keyed.shingle_hash().is_keyed());
    }
}
