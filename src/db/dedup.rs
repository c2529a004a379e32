//! All-pairs near-duplicate detection inside one database: every band's buckets are scanned
//! (one band in memory at a time), each pair sharing a bucket is verified against the stored
//! signatures, and each unordered pair at or above the threshold is reported once.

use std::collections::{BTreeMap, HashSet};

use rayon::prelude::*;

use super::Db;
use super::state::State;
use crate::sketch::bbit;
use crate::storage::segment::band_key32;
use crate::{Error, Result};

/// One verified near-duplicate pair (`a` is the older document).
#[derive(Clone, Debug, PartialEq)]
pub struct DedupPair {
    /// Key of the older document.
    pub a: Vec<u8>,
    /// Key of the newer document.
    pub b: Vec<u8>,
    /// Estimated Jaccard similarity.
    pub jaccard: f64,
}

/// What a dedup pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Candidate pairs compared (a pair sharing several bands counts once per band).
    pub compared: u64,
    /// Distinct pairs at or above the threshold.
    pub pairs: u64,
    /// Buckets truncated to the bucket cap during the pass.
    pub capped_buckets: u64,
}

/// Pairs of documents as (older docno, newer docno, estimate).
type DocPair = (u64, u64, f64);

impl Db {
    /// Calls `emit` once for every unordered pair of live documents whose estimated Jaccard is
    /// at least `threshold` and that share at least one band bucket. Memory is bounded by one
    /// band's postings plus the pairs found. The pass reads a snapshot taken when it starts:
    /// writers, flushes and compactions go on meanwhile and are not seen.
    pub fn dedup_pairs(
        &self,
        threshold: f64,
        mut emit: impl FnMut(DedupPair) -> Result<()>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<DedupStats> {
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in (0, 1], got {threshold}"),
            ));
        }
        let state = self.state.read().snapshot();
        let mut stats = DedupStats::default();
        let mut seen: HashSet<(u64, u64)> = HashSet::new();
        let bands = self.params.lsh.bands;
        for band in 0..bands {
            progress(band, bands);
            let found = self.band_pairs(&state, band, threshold, &mut stats)?;
            for (a, b, jaccard) in found {
                if !seen.insert((a, b)) {
                    continue;
                }
                let key = |d: u64| -> Result<Vec<u8>> {
                    Ok(state.key_of(d)?.map(<[u8]>::to_vec).unwrap_or_default())
                };
                stats.pairs += 1;
                emit(DedupPair {
                    a: key(a)?,
                    b: key(b)?,
                    jaccard,
                })?;
            }
        }
        progress(bands, bands);
        Ok(stats)
    }

    fn band_pairs(
        &self,
        state: &State,
        band: usize,
        threshold: f64,
        stats: &mut DedupStats,
    ) -> Result<Vec<DocPair>> {
        // (key32, docno) of every live document in this band.
        let mut postings: Vec<(u32, u64)> = Vec::new();
        for seg in &state.version.segments {
            seg.seg.for_each_posting(band, |k, d| {
                if !state.is_deleted(d) {
                    postings.push((k, d));
                }
                Ok(())
            })?;
        }
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            for (d, doc) in table.live_docs() {
                if !state.is_deleted(d)
                    && let Some(&bk) = doc.band_keys.get(band)
                {
                    postings.push((band_key32(bk), d));
                }
            }
        }
        postings.par_sort_unstable();
        let cap = self.params.bucket_cap.map_or(usize::MAX, |c| c as usize);
        let mut buckets: Vec<&[(u32, u64)]> = Vec::new();
        for run in postings.chunk_by(|x, y| x.0 == y.0) {
            if run.len() >= 2 {
                if run.len() > cap {
                    stats.capped_buckets += 1;
                }
                buckets.push(run.get(..run.len().min(cap)).unwrap_or(run));
            }
        }
        let k = self.params.sketch.num_perm;
        let bits = self.params.bits;
        let record_bytes = self.params.sig_bytes();
        let min_equal = bbit::min_matches_for(threshold, k, bits);
        let compared: u64 = buckets
            .iter()
            .map(|b| (b.len() * (b.len() - 1) / 2) as u64)
            .sum();
        stats.compared += compared;
        let per_bucket: Result<Vec<Vec<DocPair>>> = buckets
            .par_iter()
            .map(|bucket| {
                let mut out = Vec::new();
                for (i, &(_, a)) in bucket.iter().enumerate() {
                    let Some(sa) = state.signature_bytes(a, record_bytes)? else {
                        continue;
                    };
                    for &(_, b) in bucket.iter().skip(i + 1) {
                        let Some(sb) = state.signature_bytes(b, record_bytes)? else {
                            continue;
                        };
                        if let Ok(Some(eq)) =
                            bbit::count_equal_packed_at_least(sa, sb, k, bits, min_equal)
                        {
                            let j = bbit::estimate_from_matches(eq, k, bits);
                            if j >= threshold {
                                out.push((a.min(b), a.max(b), j));
                            }
                        }
                    }
                }
                Ok(out)
            })
            .collect();
        Ok(per_bucket?.into_iter().flatten().collect())
    }

    /// Groups near-duplicates into clusters without chaining: documents are visited oldest
    /// first; an unassigned document becomes a cluster's center and takes every unassigned
    /// document verified similar to it. Every member is therefore within the threshold of its
    /// center, never linked only through a long path. Clusters are returned with the center
    /// first (the document to keep), members by age; singletons are omitted. Like
    /// [`Db::dedup_pairs`], it reads a snapshot taken when it starts.
    pub fn dedup_clusters(&self, threshold: f64) -> Result<Vec<Vec<Vec<u8>>>> {
        let state = self.state.read().snapshot();
        let mut edges: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        {
            let mut stats = DedupStats::default();
            let mut seen = HashSet::new();
            for band in 0..self.params.lsh.bands {
                for (a, b, _) in self.band_pairs(&state, band, threshold, &mut stats)? {
                    if seen.insert((a, b)) {
                        edges.entry(a).or_default().push(b);
                        edges.entry(b).or_default().push(a);
                    }
                }
            }
        }
        let mut assigned: HashSet<u64> = HashSet::new();
        let mut clusters = Vec::new();
        for (&center, neighbours) in &edges {
            if assigned.contains(&center) {
                continue;
            }
            let mut members: Vec<u64> = neighbours
                .iter()
                .copied()
                .filter(|n| !assigned.contains(n))
                .collect();
            if members.is_empty() {
                continue;
            }
            members.sort_unstable();
            members.dedup();
            assigned.insert(center);
            assigned.extend(members.iter().copied());
            clusters.push(std::iter::once(center).chain(members).collect::<Vec<u64>>());
        }
        clusters
            .into_iter()
            .map(|c| {
                c.into_iter()
                    .map(|d| Ok(state.key_of(d)?.map(<[u8]>::to_vec).unwrap_or_default()))
                    .collect()
            })
            .collect()
    }
}
