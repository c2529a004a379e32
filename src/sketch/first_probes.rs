//! Optimal densification (spec §5) of a sketch with few filled bins, by table.
//!
//! An empty bin `i` copies the first filled bin of its probe sequence
//! `j_t = reduce(mix64(seed ^ (i << 32) ^ t))`, t = 1, 2, … With m of k bins filled a probe
//! finds one with chance m/k, so probing costs about (k − m)·k/m hashes per sketch: 262,000
//! for a one-shingle text at k = 512, where a 600-character text needs a few thousand.
//!
//! The sequences depend on the seed and k only, not on the text. [`FirstProbes`] records,
//! for every bin `i` and every bin `b`, the first `t` at which `i`'s sequence reaches `b`;
//! the first filled bin of `i`'s sequence is then the filled `b` with the least such `t`
//! (each `t` names one bin, so there are no ties): m lookups per empty bin instead of k/m
//! probes. The answer is the definition's, bit for bit (tested against it).

use super::minhash::EMPTY_SLOT;
use super::spec::{mix64, reduce_high32};

/// The largest k a table is built for: k² entries of 2 bytes (2 MiB at 1,024).
pub(super) const MAX_TABLE_SLOTS: usize = 1024;

/// A probe step too late to record (`u16`); no bin of a table's k ever needs that many to
/// reach every bin in practice (about k·ln k suffice), and a bin that would is probed
/// directly.
const NOT_WITHIN: u16 = 0;

/// For k bins and one seed: the first probe step at which each bin's sequence reaches each
/// bin.
pub(super) struct FirstProbes {
    k: usize,
    /// `first[i * k + b]`: the least t ≥ 1 with `j_t(i) = b`, or [`NOT_WITHIN`].
    first: Vec<u16>,
}

impl std::fmt::Debug for FirstProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FirstProbes {{ k: {} }}", self.k)
    }
}

impl FirstProbes {
    /// Builds the table: each bin's sequence is followed until it has reached every bin
    /// (about k·ln k steps) or `u16::MAX` steps.
    pub(super) fn new(seed: u64, k: usize) -> Self {
        let mut first = vec![NOT_WITHIN; k * k];
        for (i, row) in first.chunks_exact_mut(k.max(1)).enumerate() {
            let mut left = k;
            let mut t = 1u64;
            while left > 0 && t < u64::from(u16::MAX) {
                let b = reduce_high32(mix64(seed ^ ((i as u64) << 32) ^ t), k);
                if let Some(slot) = row.get_mut(b)
                    && *slot == NOT_WITHIN
                {
                    *slot = t as u16;
                    left -= 1;
                }
                t += 1;
            }
        }
        FirstProbes { k, first }
    }

    /// Whether the table beats probing for `filled` of `k` bins: m lookups per empty bin
    /// against k/m probes.
    pub(super) fn pays(filled: usize, k: usize) -> bool {
        filled > 0 && filled * filled < k && k <= MAX_TABLE_SLOTS
    }

    /// `raw` densified (every empty bin copies the first filled bin of its sequence), when
    /// the table is for `raw`'s length; `raw` must have a filled bin.
    pub(super) fn densify(&self, raw: &[u64], seed: u64) -> Vec<u64> {
        let k = self.k;
        debug_assert_eq!(raw.len(), k);
        let filled: Vec<usize> = (0..k)
            .filter(|&b| raw.get(b).is_some_and(|&v| v != EMPTY_SLOT))
            .collect();
        let mut out = raw.to_vec();
        for (i, o) in out.iter_mut().enumerate() {
            if *o != EMPTY_SLOT {
                continue;
            }
            let row = self.first.get(i * k..(i + 1) * k).unwrap_or_default();
            let best = filled
                .iter()
                .filter_map(|&b| row.get(b).filter(|&&t| t != NOT_WITHIN).map(|&t| (t, b)))
                .min();
            *o = match best {
                Some((_, b)) => raw.get(b).copied().unwrap_or(EMPTY_SLOT),
                // Not reached within the table's steps: probe on from there.
                None => (u64::from(u16::MAX)..)
                    .map(|t| reduce_high32(mix64(seed ^ ((i as u64) << 32) ^ t), k))
                    .filter_map(|j| raw.get(j).copied())
                    .find(|&v| v != EMPTY_SLOT)
                    .unwrap_or(EMPTY_SLOT),
            };
        }
        out
    }
}

/// Densification by its definition, bin by bin (what the fast paths are tested against).
#[cfg(test)]
pub(super) fn by_definition(raw: &[u64], seed: u64) -> Vec<u64> {
    let k = raw.len();
    if raw.iter().all(|&v| v == EMPTY_SLOT) {
        return raw.to_vec();
    }
    (0..k)
        .map(|i| {
            if raw[i] != EMPTY_SLOT {
                return raw[i];
            }
            (1u64..)
                .map(|t| raw[reduce_high32(mix64(seed ^ ((i as u64) << 32) ^ t), k)])
                .find(|&v| v != EMPTY_SLOT)
                .unwrap()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bin of every table reaches every bin well within the recorded steps, and the
    /// table densifies as the definition does, for few and for many filled bins.
    #[test]
    fn the_table_densifies_as_the_definition() {
        let mut x = 0x5EED_u64;
        for &k in &[1usize, 2, 7, 64, 128, 512, 1000, 1024] {
            for s in 0..3u64 {
                let seed = mix64(s ^ k as u64);
                let table = FirstProbes::new(seed, k);
                assert!(table.first.iter().all(|&t| t != NOT_WITHIN), "k {k}");
                for filled in [1usize, 2, 3, 5, 8, 13, 22, 31, 40] {
                    if filled > k {
                        continue;
                    }
                    let mut raw = vec![EMPTY_SLOT; k];
                    let mut placed = 0;
                    while placed < filled {
                        x = mix64(x);
                        let b = (x % k as u64) as usize;
                        if raw[b] == EMPTY_SLOT {
                            raw[b] = x >> 1;
                            placed += 1;
                        }
                    }
                    assert_eq!(
                        table.densify(&raw, seed),
                        by_definition(&raw, seed),
                        "k {k}, seed {seed}, {filled} filled"
                    );
                }
            }
        }
    }

    #[test]
    fn the_table_pays_for_few_filled_bins_only() {
        assert!(FirstProbes::pays(1, 512) && FirstProbes::pays(22, 512));
        assert!(!FirstProbes::pays(23, 512) && !FirstProbes::pays(0, 512));
        assert!(!FirstProbes::pays(1, 2048));
    }
}
