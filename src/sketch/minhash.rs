//! MinHash signatures: k-permutation and one-permutation hashing with optimal densification.
//!
//! Both schemes share one pipeline: shingle hashes are folded into a [`PartialSketch`] (raw
//! slot minima, [`EMPTY_SLOT`] where nothing landed), partial sketches merge slot-wise by `min`,
//! and [`MinHasher::finish`] turns one into a [`Signature`] (for OPH this is where densification
//! happens, so sketches built in pieces equal one built at once).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use multiversion::multiversion;
use rayon::prelude::*;

use super::exact::ExactHasher;
use super::first_probes::FirstProbes;
use super::keyed::{KeyFingerprint, SecretKey, ShingleHash};
use super::shingle::ShingleConfig;
use super::shingle_set::{SetDerivation, SetValueHash, ShingleSet};
use super::spec::{MAX_NUM_PERM, Purpose, Scheme, SplitMix64, derive_seed, mix64, reduce_high32};
use crate::{Error, Result};

pub use super::signature::Signature;

/// The value of a slot that no shingle reached. Only the signature of the empty set has it
/// after [`MinHasher::finish`].
pub const EMPTY_SLOT: u64 = u64::MAX;

/// Everything that determines a signature: two equal `SketchParams` give equal signatures
/// for equal text, on every machine, forever (for one [`SPEC_VERSION`](super::SPEC_VERSION)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SketchParams {
    /// OPH (default) or k-permutation.
    pub scheme: Scheme,
    /// Number of slots k.
    pub num_perm: usize,
    /// User seed; every internal seed is derived from it.
    pub seed: u64,
    /// Normalization and shingling.
    pub shingle: ShingleConfig,
}

impl Default for SketchParams {
    fn default() -> Self {
        SketchParams {
            scheme: Scheme::Oph,
            num_perm: 128,
            seed: 0,
            shingle: ShingleConfig::default(),
        }
    }
}

impl SketchParams {
    /// Checks every field; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.num_perm == 0 || self.num_perm > MAX_NUM_PERM {
            return Err(Error::invalid(
                "num_perm",
                format!("must be in 1..={MAX_NUM_PERM}, got {}", self.num_perm),
            ));
        }
        self.shingle.validate()
    }
}

/// Raw per-slot minima of a shingle set, before densification. Merge these, not signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialSketch {
    scheme: Scheme,
    raw: Vec<u64>,
}

impl PartialSketch {
    /// The raw slot minima ([`EMPTY_SLOT`] where no shingle landed).
    pub fn raw(&self) -> &[u64] {
        &self.raw
    }

    /// Adds `other`'s shingle set to this one (slot-wise min). Associative, commutative and
    /// idempotent; the result equals a sketch of the union built in one go.
    pub fn merge(&mut self, other: &PartialSketch) -> Result<()> {
        if self.scheme != other.scheme || self.raw.len() != other.raw.len() {
            return Err(Error::invalid(
                "sketch",
                format!(
                    "cannot merge a {}/{} sketch into a {}/{} sketch",
                    other.scheme,
                    other.raw.len(),
                    self.scheme,
                    self.raw.len()
                ),
            ));
        }
        for (a, &b) in self.raw.iter_mut().zip(other.raw.iter()) {
            *a = (*a).min(b);
        }
        Ok(())
    }
}

/// Computes signatures for one [`SketchParams`]. Cheap to share across threads.
#[derive(Clone, Debug)]
pub struct MinHasher {
    params: SketchParams,
    shingle_hash: ShingleHash,
    /// How the shingles of a signature with its set attached become stored values.
    set_values: SetValueHash,
    key_fingerprint: KeyFingerprint,
    densify_seed: u64,
    perm_mul: Vec<u32>,
    perm_add: Vec<u32>,
    /// OPH: the densification table for sketches with few filled bins, built on first need
    /// (see `first_probes`).
    first_probes: OnceLock<Arc<FirstProbes>>,
}

thread_local! {
    /// Per-thread scratch: the normalized text and, for k-permutation, the u32 minima.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Shingle hashes are folded into k-permutation minima in chunks of this many.
const HASH_CHUNK: usize = 256;

impl MinHasher {
    /// Builds a hasher, deriving every constant from (scheme, seed, spec version).
    ///
    /// Foreign schemes (datasketch's) are refused: mhdb does not compute their signatures.
    pub fn new(params: SketchParams) -> Result<Self> {
        params.validate()?;
        if !params.scheme.signs_text() {
            return Err(params.scheme.text_refused());
        }
        let k = params.num_perm;
        let (mut perm_mul, mut perm_add) = (Vec::new(), Vec::new());
        if params.scheme == Scheme::KPerm {
            let mut rng = SplitMix64::new(derive_seed(params.scheme, params.seed, Purpose::Perm));
            perm_mul.reserve(k);
            perm_add.reserve(k);
            for _ in 0..k {
                let r = rng.next_u64();
                perm_mul.push((r as u32) | 1);
                perm_add.push((r >> 32) as u32);
            }
        }
        Ok(MinHasher {
            params,
            shingle_hash: derive_seed(params.scheme, params.seed, Purpose::Shingle).into(),
            set_values: SetValueHash::ShingleHashTop,
            key_fingerprint: KeyFingerprint::UNKEYED,
            densify_seed: derive_seed(params.scheme, params.seed, Purpose::Densify),
            perm_mul,
            perm_add,
            first_probes: OnceLock::new(),
        })
    }

    /// The parameters this hasher was built with.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Number of slots k.
    pub fn num_perm(&self) -> usize {
        self.params.num_perm
    }

    /// The seed of the public shingle hash (spec §3); a keyed hasher does not use it.
    pub fn shingle_seed(&self) -> u64 {
        derive_seed(self.params.scheme, self.params.seed, Purpose::Shingle)
    }

    /// A hasher whose shingle hash is keyed by `key` (spec §12): the same signatures in
    /// every other respect, but nobody without the key can predict them. Its stored set
    /// values are hashed under the set key (spec §14), as a keyed index of format version 3
    /// stores them.
    pub fn new_keyed(params: SketchParams, key: &SecretKey) -> Result<Self> {
        let mut hasher = Self::new(params)?;
        let name = params.scheme.name();
        hasher.shingle_hash = key.shingle_hash(name, params.seed);
        hasher.set_values = SetValueHash::Keyed(key.set_key(name, params.seed));
        hasher.key_fingerprint = key.fingerprint();
        Ok(hasher)
    }

    /// This hasher with the stored set values of format version 2 (the top halves of the
    /// shingle hashes; spec §14): what a keyed index whose sets were stored by version 2 keeps
    /// adding, so that its sets stay comparable. (An unkeyed hasher has them already.)
    pub fn with_version2_sets(mut self) -> Self {
        self.set_values = SetValueHash::ShingleHashTop;
        self
    }

    /// How this hasher derives stored set values.
    pub fn set_derivation(&self) -> SetDerivation {
        self.set_values.derivation(self.shingle_hash.is_keyed())
    }

    /// [`MinHasher::new_keyed`] with a key, [`MinHasher::new`] without.
    pub fn with_key(params: SketchParams, key: Option<&SecretKey>) -> Result<Self> {
        match key {
            Some(key) => Self::new_keyed(params, key),
            None => Self::new(params),
        }
    }

    /// How shingles are hashed: seeded XXH3, or keyed SipHash-1-3.
    pub fn shingle_hash(&self) -> ShingleHash {
        self.shingle_hash
    }

    /// The fingerprint of the key this hasher signs with ([`KeyFingerprint::UNKEYED`] for
    /// none): what a database stores and compares on open.
    pub fn key_fingerprint(&self) -> KeyFingerprint {
        self.key_fingerprint
    }

    /// A sketch of the empty set, to fold shingles into.
    pub fn empty_partial(&self) -> PartialSketch {
        PartialSketch {
            scheme: self.params.scheme,
            raw: vec![EMPTY_SLOT; self.params.num_perm],
        }
    }

    /// Normalizes `text` and returns its shingle hashes in text order (duplicates kept).
    pub fn shingle_hashes(&self, text: &str) -> Vec<u64> {
        let mut normalized = Vec::new();
        self.params
            .shingle
            .normalize_to_bytes(text, &mut normalized);
        let mut out = Vec::new();
        self.params
            .shingle
            .for_each_shingle_hash_in(&normalized, self.shingle_hash, |h| out.push(h));
        out
    }

    /// Normalizes `text` and calls `f` with every shingle hash in text order (duplicates kept),
    /// without collecting them: the streaming form of [`MinHasher::shingle_hashes`].
    pub fn for_each_shingle_hash(&self, text: &str, f: impl FnMut(u64)) {
        // Borrow the per-thread buffer by taking it, so `f` may itself sketch (re-entrancy).
        let mut normalized = SCRATCH.with(|cell| std::mem::take(&mut cell.borrow_mut().0));
        self.params
            .shingle
            .normalize_to_bytes(text, &mut normalized);
        self.params
            .shingle
            .for_each_shingle_hash_in(&normalized, self.shingle_hash, f);
        SCRATCH.with(|cell| cell.borrow_mut().0 = normalized);
    }

    /// Folds already computed shingle hashes into `partial`.
    pub fn add_hashes(&self, partial: &mut PartialSketch, hashes: &[u64]) {
        match self.params.scheme {
            Scheme::Oph => oph_update(&mut partial.raw, hashes),
            // (`new` refuses the foreign schemes: only k-permutation is left.)
            _ => {
                SCRATCH.with(|cell| {
                    let mut guard = cell.borrow_mut();
                    let mins = &mut guard.1;
                    for chunk in hashes.chunks(HASH_CHUNK) {
                        self.kperm_fold(&mut partial.raw, mins, chunk);
                    }
                });
            }
        }
    }

    /// Folds the shingles of `text` into `partial`.
    pub fn add_text(&self, partial: &mut PartialSketch, text: &str) {
        self.add_text_then(partial, text, |_| ());
    }

    /// [`MinHasher::add_text`], then `normalized` called with the normalized text (which it
    /// has at hand, so that an exact hash of it costs no second normalization).
    fn add_text_then<R>(
        &self,
        partial: &mut PartialSketch,
        text: &str,
        normalized_then: impl FnOnce(&[u8]) -> R,
    ) -> R {
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let (normalized, mins) = &mut *guard;
            self.params.shingle.normalize_to_bytes(text, normalized);
            match self.params.scheme {
                Scheme::Oph => {
                    let raw = &mut partial.raw;
                    let k = raw.len();
                    self.params.shingle.for_each_shingle_hash_in(
                        normalized,
                        self.shingle_hash,
                        |h| oph_update_one(raw, k, h),
                    );
                }
                _ => {
                    let mut buf = [0u64; HASH_CHUNK];
                    let mut len = 0usize;
                    self.params.shingle.for_each_shingle_hash_in(
                        normalized,
                        self.shingle_hash,
                        |h| {
                            if let Some(slot) = buf.get_mut(len) {
                                *slot = h;
                                len += 1;
                            }
                            if len == HASH_CHUNK {
                                self.kperm_fold(&mut partial.raw, mins, &buf);
                                len = 0;
                            }
                        },
                    );
                    if let Some(rest) = buf.get(..len) {
                        self.kperm_fold(&mut partial.raw, mins, rest);
                    }
                }
            }
            normalized_then(normalized)
        })
    }

    fn kperm_fold(&self, raw: &mut [u64], mins: &mut Vec<u32>, hashes: &[u64]) {
        if hashes.is_empty() {
            return;
        }
        mins.clear();
        mins.resize(raw.len(), u32::MAX);
        kperm_kernel(mins, &self.perm_mul, &self.perm_add, hashes);
        for (r, &m) in raw.iter_mut().zip(mins.iter()) {
            *r = (*r).min(u64::from(m));
        }
    }

    /// Turns raw minima into a signature; for OPH, fills empty bins by optimal densification.
    pub fn finish(&self, partial: &PartialSketch) -> Signature {
        match self.params.scheme {
            Scheme::Oph => {
                let (raw, seed) = (&partial.raw, self.densify_seed);
                let table = || {
                    &**self
                        .first_probes
                        .get_or_init(|| Arc::new(FirstProbes::new(seed, raw.len())))
                };
                Signature::from_slots(densify(raw, seed, Some(&table)))
            }
            _ => Signature::from_slots(partial.raw.clone()),
        }
    }

    /// The signature of `text`.
    pub fn sketch_text(&self, text: &str) -> Signature {
        let mut partial = self.empty_partial();
        self.add_text(&mut partial, text);
        self.finish(&partial)
    }

    /// The signature of `text` with its exact hash under `exact` attached (spec §17), the
    /// text normalized once for both.
    pub fn sketch_text_with_exact(&self, text: &str, exact: &ExactHasher) -> Signature {
        let mut partial = self.empty_partial();
        let hash = self.add_text_then(&mut partial, text, |n| exact.hash_bytes(n));
        self.finish(&partial).with_exact_hash(hash)
    }

    /// The signature of a set given by its shingle hashes.
    pub fn sketch_hashes(&self, hashes: &[u64]) -> Signature {
        let mut partial = self.empty_partial();
        self.add_hashes(&mut partial, hashes);
        self.finish(&partial)
    }

    /// The signature of `text` with its shingle set attached (for an index that stores sets);
    /// the signature is the one [`MinHasher::sketch_text`] computes.
    pub fn sketch_text_with_set(&self, text: &str) -> Signature {
        let (hashes, set) = self.hashes_and_set(text);
        self.sketch_hashes(&hashes).with_shingle_set(set)
    }

    /// The stored shingle set of `text` (spec §14), as [`MinHasher::sketch_text_with_set`]
    /// attaches it.
    pub fn shingle_set(&self, text: &str) -> ShingleSet {
        self.hashes_and_set(text).1
    }

    /// The signature of the shingles `for_each_shingle` gives (their bytes, in order) with
    /// their set attached: [`MinHasher::sketch_text_with_set`] for shingles made otherwise
    /// than from text (a token list, say).
    pub fn sketch_shingles_with_set(
        &self,
        for_each_shingle: impl FnOnce(&mut dyn FnMut(&[u8])),
    ) -> Signature {
        let (hashes, set) = self.hashes_and_values(for_each_shingle);
        self.sketch_hashes(&hashes).with_shingle_set(set)
    }

    /// The hashes of the shingles `for_each_shingle` gives (in order) and their stored set.
    fn hashes_and_values(
        &self,
        for_each_shingle: impl FnOnce(&mut dyn FnMut(&[u8])),
    ) -> (Vec<u64>, ShingleSet) {
        let (mut hashes, mut values) = (Vec::new(), Vec::new());
        for_each_shingle(&mut |shingle| {
            let h = self.shingle_hash.hash_bytes(shingle);
            hashes.push(h);
            values.push(self.set_values.value(shingle, h));
        });
        (hashes, ShingleSet::from_values(values))
    }

    /// The shingle hashes of `text` (in order, duplicates kept) and its stored set.
    fn hashes_and_set(&self, text: &str) -> (Vec<u64>, ShingleSet) {
        if self.set_values == SetValueHash::ShingleHashTop {
            // The values are the hashes' top halves: hashed once, on the fast path.
            let hashes = self.shingle_hashes(text);
            let set = ShingleSet::from_hashes(hashes.iter().copied());
            return (hashes, set);
        }
        let mut normalized = Vec::new();
        let shingle = &self.params.shingle;
        shingle.normalize_to_bytes(text, &mut normalized);
        self.hashes_and_values(|emit| shingle.for_each_shingle_in(&normalized, emit))
    }

    /// Signatures of many texts, computed on every core.
    pub fn sketch_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<Signature> {
        texts
            .par_iter()
            .map(|t| self.sketch_text(t.as_ref()))
            .collect()
    }
}

#[inline(always)]
fn oph_update_one(raw: &mut [u64], k: usize, h: u64) {
    if let Some(slot) = raw.get_mut(reduce_high32(h, k)) {
        *slot = (*slot).min(h);
    }
}

fn oph_update(raw: &mut [u64], hashes: &[u64]) {
    let k = raw.len();
    for &h in hashes {
        oph_update_one(raw, k, h);
    }
}

/// Optimal densification (spec §5): every empty bin i copies the first non-empty bin among
/// `j_t = reduce(mix64(seed ^ (i << 32) ^ t))`, t = 1, 2, …  The empty set stays all-empty.
///
/// Computed in rounds rather than bin by bin: round t probes `j_t` for every bin still empty,
/// and keeps (compacted without branches) those whose probe found an empty bin. The probes
/// of a round do not depend on each other and no branch depends on the data, where probing
/// each bin to the end chained a hash per probe and mispredicted a branch per bin and probe
/// (with 512 slots, short texts leave a third of the bins empty: this was most of their
/// signing time).
///
/// With few bins filled (a short text), probing costs about k² / filled hashes: `table`, when
/// given, provides the [`FirstProbes`] of this seed and k, which find the same bins by lookup.
fn densify<'t>(raw: &[u64], seed: u64, table: Option<&dyn Fn() -> &'t FirstProbes>) -> Vec<u64> {
    let k = raw.len();
    let mut pending: Vec<u32> = vec![0; k];
    let mut len = 0usize;
    for (i, &v) in raw.iter().enumerate() {
        if let Some(p) = pending.get_mut(len) {
            *p = i as u32;
        }
        len += usize::from(v == EMPTY_SLOT);
    }
    if len == k {
        return raw.to_vec();
    }
    if let Some(table) = table.filter(|_| FirstProbes::pays(k - len, k)) {
        return table().densify(raw, seed);
    }
    let mut out = raw.to_vec();
    let mut probes: Vec<u32> = vec![0; len];
    let mut t: u64 = 1;
    while len > 0 {
        let (waiting, targets) = (
            pending.get(..len).unwrap_or_default(),
            probes.get_mut(..len).unwrap_or_default(),
        );
        densify_probes(waiting, targets, seed, t, k);
        let mut still = 0usize;
        for at in 0..len {
            let i = pending.get(at).copied().unwrap_or(0);
            let j = probes.get(at).copied().unwrap_or(0) as usize;
            let found = raw.get(j).copied().unwrap_or(EMPTY_SLOT);
            if let Some(o) = out.get_mut(i as usize) {
                *o = found;
            }
            // `still` ≤ `at`: this overwrites an entry already read.
            if let Some(p) = pending.get_mut(still) {
                *p = i;
            }
            still += usize::from(found == EMPTY_SLOT);
        }
        len = still;
        t += 1;
    }
    out
}

/// Round `t`'s probe of every waiting bin: `reduce(mix64(seed ^ (i << 32) ^ t))`. Apart from
/// the gather, so that it vectorizes (the two 64-bit multiplies of `mix64` are `vpmullq` on
/// AVX-512DQ, 8 bins per instruction); every version computes the same integers.
#[multiversion(targets("x86_64+avx512f+avx512dq+avx512vl", "x86_64+avx2", "aarch64+neon"))]
fn densify_probes(waiting: &[u32], targets: &mut [u32], seed: u64, t: u64, k: usize) {
    for (target, &i) in targets.iter_mut().zip(waiting) {
        *target = reduce_high32(mix64(seed ^ (u64::from(i) << 32) ^ t), k) as u32;
    }
}

/// `mins[i] = min(mins[i], mul[i] * x + add[i] mod 2^32)` over every hash `x` (low 32 bits).
///
/// Hashes are taken in tiles of 8 (the last tile padded by repeating the last hash, which
/// cannot change a minimum); for each tile one pass over the slots folds all 8 into each slot.
/// The slot loop is the innermost real loop, so it vectorizes along the slots (8 u32 lanes per
/// AVX2 register: `vpmulld`, `vpaddd`, `vpminud` on ymm) with the 8 tile values broadcast in
/// registers, and each slot's minimum is loaded and stored once per 8 hashes. (A hash-inner
/// layout invites LLVM to vectorize across hashes as min-reductions, which spills.)
/// `multiversion` compiles it for AVX-512, AVX2 and baseline and picks one at run time, once
/// per call; all versions compute the same integers, so signatures are bit-identical.
#[multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl",
    "x86_64+avx2",
    "x86_64+sse4.1",
    "aarch64+neon"
))]
fn kperm_kernel(mins: &mut [u32], mul: &[u32], add: &[u32], hashes: &[u64]) {
    const TILE: usize = 8;
    let Some(&last) = hashes.last() else {
        return;
    };
    for tile in hashes.chunks(TILE) {
        let mut x = [last as u32; TILE];
        for (d, &h) in x.iter_mut().zip(tile) {
            *d = h as u32;
        }
        for ((m, &a), &b) in mins.iter_mut().zip(mul).zip(add) {
            let mut v = *m;
            for &xj in &x {
                v = v.min(a.wrapping_mul(xj).wrapping_add(b));
            }
            *m = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hasher(scheme: Scheme, k: usize) -> MinHasher {
        MinHasher::new(SketchParams {
            scheme,
            num_perm: k,
            ..SketchParams::default()
        })
        .unwrap()
    }

    #[test]
    fn rejects_bad_num_perm() {
        for k in [0, MAX_NUM_PERM + 1] {
            let err = MinHasher::new(SketchParams {
                num_perm: k,
                ..SketchParams::default()
            })
            .unwrap_err();
            assert!(err.to_string().contains("num_perm"), "{err}");
        }
    }

    #[test]
    fn oph_has_no_empty_slot_for_tiny_sets() {
        let h = hasher(Scheme::Oph, 128);
        for n in [1u64, 2, 10] {
            let hashes: Vec<u64> = (0..n).map(|i| mix64(i + 1000)).collect();
            let sig = h.sketch_hashes(&hashes);
            assert!(sig.slots().iter().all(|&s| s != EMPTY_SLOT), "n = {n}");
            // Every slot holds one of the set's hashes.
            assert!(sig.slots().iter().all(|s| hashes.contains(s)));
        }
    }

    #[test]
    fn empty_text_gives_the_empty_set_signature() {
        for scheme in [Scheme::Oph, Scheme::KPerm] {
            let h = hasher(scheme, 64);
            let sig = h.sketch_text(" \t ");
            assert!(sig.is_empty_set());
            assert_eq!(sig, h.sketch_text(""));
            assert!(!h.sketch_text("x").is_empty_set());
        }
    }

    #[test]
    fn text_and_hash_paths_agree() {
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(40);
        for scheme in [Scheme::Oph, Scheme::KPerm] {
            for k in [1, 17, 128] {
                let h = hasher(scheme, k);
                assert_eq!(
                    h.sketch_text(&text),
                    h.sketch_hashes(&h.shingle_hashes(&text))
                );
            }
        }
    }

    #[test]
    fn streaming_shingle_hashes_equal_collected() {
        let text = "Ünïcode and ASCII, \t mixed TEXT. ".repeat(20);
        for scheme in [Scheme::Oph, Scheme::KPerm] {
            let h = hasher(scheme, 64);
            for t in [text.as_str(), "plain ascii text here", "", "abc"] {
                let mut streamed = Vec::new();
                h.for_each_shingle_hash(t, |x| {
                    // Re-entrant use of the same thread's scratch must be fine.
                    let _ = h.sketch_text("nested");
                    streamed.push(x);
                });
                assert_eq!(streamed, h.shingle_hashes(t));
            }
        }
    }

    #[test]
    fn kernel_matches_scalar_definition() {
        let h = hasher(Scheme::KPerm, 37);
        let hashes: Vec<u64> = (0..1000).map(mix64).collect();
        let sig = h.sketch_hashes(&hashes);
        for (i, &slot) in sig.slots().iter().enumerate() {
            let expect = hashes
                .iter()
                .map(|&x| {
                    h.perm_mul[i]
                        .wrapping_mul(x as u32)
                        .wrapping_add(h.perm_add[i])
                })
                .min()
                .unwrap();
            assert_eq!(slot, u64::from(expect));
        }
    }

    #[test]
    fn kernel_handles_every_tile_and_slot_remainder() {
        for k in [1, 7, 8, 9, 16, 33, 128] {
            let h = hasher(Scheme::KPerm, k);
            for n in [1usize, 2, 7, 8, 9, 15, 17, 255, 256, 257, 600] {
                let hashes: Vec<u64> = (0..n as u64).map(|i| mix64(i ^ 0xABCD)).collect();
                let sig = h.sketch_hashes(&hashes);
                for (i, &slot) in sig.slots().iter().enumerate() {
                    let expect = hashes
                        .iter()
                        .map(|&x| {
                            h.perm_mul[i]
                                .wrapping_mul(x as u32)
                                .wrapping_add(h.perm_add[i])
                        })
                        .min()
                        .unwrap();
                    assert_eq!(slot, u64::from(expect), "k = {k}, n = {n}, slot {i}");
                }
            }
        }
    }

    /// Densification in rounds equals the spec's bin-by-bin definition, on sparse and dense
    /// sketches of many sizes (one non-empty bin among thousands, every bin but one empty, …).
    #[test]
    fn densify_in_rounds_equals_the_definition() {
        let by_definition = super::super::first_probes::by_definition;
        let mut x = 0x0DE5_17F7_u64;
        for round in 0..1_000u64 {
            x = mix64(x);
            let k = [1, 2, 7, 128, 512, 1000, 2048][(x % 7) as usize];
            let filled_per_mille = [0, 1, 10, 300, 700, 999, 1000][((x >> 8) % 7) as usize];
            let mut raw: Vec<u64> = (0..k)
                .map(|i| {
                    let r = mix64(x ^ (i as u64) ^ round << 20);
                    if r % 1000 < filled_per_mille {
                        r >> 1
                    } else {
                        EMPTY_SLOT
                    }
                })
                .collect();
            if round % 5 == 0 {
                raw[(x >> 16) as usize % k] = x >> 3; // at least one filled bin
            }
            let seed = mix64(round);
            assert_eq!(
                densify(&raw, seed, None),
                by_definition(&raw, seed),
                "k {k}, round {round}"
            );
        }
    }

    #[test]
    fn merge_rejects_mismatched_sketches() {
        let a = hasher(Scheme::Oph, 16).empty_partial();
        let mut b = hasher(Scheme::KPerm, 16).empty_partial();
        assert!(b.merge(&a).is_err());
        let mut c = hasher(Scheme::Oph, 8).empty_partial();
        assert!(c.merge(&a).is_err());
    }
}
