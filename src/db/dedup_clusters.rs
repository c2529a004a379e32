//! The star-cluster pass's bookkeeping: which documents are taken, and each center's
//! verified candidates, found a block of centers at a time on every core.

use rayon::prelude::*;

use super::{BucketIndex, DedupStats, NO_BUCKET, PARALLEL_CANDIDATES, Verifier};

/// Centers a cluster pass verifies at once, on every core, before it builds their stars in
/// order: the work of a center that an earlier one of its block takes is lost, so a block
/// is small against the documents and large against the cores.
pub(super) const CENTER_BLOCK: u32 = 64;

/// A clustering pass's bookkeeping.
pub(super) struct Clustering {
    /// Ordinals already in a cluster.
    assigned: Vec<bool>,
}

impl Clustering {
    pub(super) fn new(n: usize) -> Self {
        Clustering {
            assigned: vec![false; n],
        }
    }

    /// For each unassigned center of `centers`, on every core: the comparisons made and the
    /// candidates verified similar to it, among those unassigned now. A center's turn comes
    /// after the earlier ones of the block, whose stars can only take more documents: so its
    /// members then are these, less those taken meanwhile (and a center taken meanwhile has
    /// none). Errors are left in `verify`.
    pub(super) fn block(
        &self,
        index: &BucketIndex,
        verify: &Verifier<'_>,
        centers: std::ops::Range<u32>,
    ) -> Vec<(u32, u64, Vec<u32>)> {
        let todo: Vec<u32> = centers.filter(|&c| !self.is_assigned(c)).collect();
        todo.into_par_iter()
            .map(|center| {
                let candidates = self.candidates(index, center);
                if candidates.is_empty() {
                    return (center, 0, Vec::new());
                }
                let Some(sc) = verify.signature(center) else {
                    return (center, 0, Vec::new());
                };
                let members = similar_to_center(verify, center, sc, &candidates);
                (center, candidates.len() as u64, members)
            })
            .collect()
    }

    pub(super) fn is_assigned(&self, o: u32) -> bool {
        self.assigned.get(o as usize).copied().unwrap_or(true)
    }

    fn assign(&mut self, o: u32) {
        if let Some(a) = self.assigned.get_mut(o as usize) {
            *a = true;
        }
    }

    /// The star of `center`: it first, then `members` (the unassigned candidates similar to
    /// it) and the exact copies any of them stands for, by age; all assigned. Empty when
    /// there are no members.
    pub(super) fn star(
        &mut self,
        index: &BucketIndex,
        center: u32,
        mut members: Vec<u32>,
        stats: &mut DedupStats,
    ) -> Vec<u32> {
        // Each document taken brings its exact copies: they are as similar to the center.
        let copies: Vec<u32> = std::iter::once(center)
            .chain(members.iter().copied())
            .flat_map(|o| index.copies.of(o))
            .collect();
        stats.exact_copies += copies.len() as u64;
        members.extend(copies);
        if members.is_empty() {
            return members;
        }
        members.sort_unstable();
        stats.pairs += members.len() as u64;
        members.insert(0, center);
        for &o in &members {
            self.assign(o);
        }
        members
    }

    /// The unassigned members after `center` of its buckets, each once, ascending.
    fn candidates(&self, index: &BucketIndex, center: u32) -> Vec<u32> {
        let mut candidates = Vec::new();
        for bb in &index.bands {
            let bucket = bb
                .bucket_of
                .get(center as usize)
                .copied()
                .unwrap_or(NO_BUCKET);
            if bucket == NO_BUCKET {
                continue;
            }
            let members = bb.bucket(bucket);
            // Older members are either assigned or were centers that did not take this one.
            let later = members.partition_point(|&m| m <= center);
            let members = members.get(later..).unwrap_or_default();
            candidates.extend(members.iter().filter(|&&m| !self.is_assigned(m)));
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates
    }
}

/// The `candidates` verified similar to `center` (its stored signature `sc`), in the order of
/// `candidates`; on every core when there are many.
fn similar_to_center(
    verify: &Verifier<'_>,
    center: u32,
    sc: &[u8],
    candidates: &[u32],
) -> Vec<u32> {
    let mut set_c = Vec::new();
    verify.set(center, &mut set_c);
    let take = |chunk: &[u32]| -> Vec<u32> {
        chunk
            .iter()
            .copied()
            .filter(|&m| verify.similar(sc, &set_c, m, None).is_some())
            .collect()
    };
    if candidates.len() >= PARALLEL_CANDIDATES {
        candidates.par_chunks(512).flat_map_iter(take).collect()
    } else {
        take(candidates)
    }
}
