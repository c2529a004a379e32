//! All-pairs dedup across shards, without merging them first: the band buckets of every
//! shard are merged into one bucket index, over the documents the merged index would hold
//! (a key stored in two shards only in the later one), numbered as it would number them
//! (shard order, then insertion order). Pairs and clusters are then found as one database
//! finds them (`db/dedup.rs`): a pair is verified in the first band where it shares a
//! bucket, clusters are stars built oldest first, and each comparison is the single-database
//! one (`dedup_verify.rs`), made by the verifier of the shard that stores the newer
//! document. So the output is the merged index's, line for line.
//!
//! Cost: reading every shard's postings and every document's key once (to find keys stored
//! twice: sorted by key hash, O(N log N) for N documents), then, per band, sorting the N
//! postings together; memory about 12 bytes per document and band, as for one database.
//! The comparisons are those the merged index makes.

use rayon::prelude::*;

use super::Shards;
use crate::db::dedup::{
    BandBuckets, NO_BUCKET, PAIR_WINDOW, PARALLEL_CANDIDATES, ROW_TILE, share_earlier,
};
use crate::db::dedup::{
    DedupOptions, DedupPair, DedupStats, check_threshold, live_postings, segment_hot_keys,
};
use crate::db::dedup_verify::{Scores, Verifier};
use crate::db::state::State;
use crate::storage::segment::{cap_rank, keep_lowest_ranked};
use crate::{Error, Result};

/// The documents of a pass over shards and their merged buckets.
struct Index<'a> {
    states: &'a [State],
    /// Per shard, its documents' docnos, ascending (ordinal order within the shard).
    docnos: Vec<Vec<u64>>,
    /// Per shard, the ordinal of its first document.
    bases: Vec<u32>,
    bands: Vec<BandBuckets>,
}

impl Index<'_> {
    fn len(&self) -> u32 {
        self.bases.last().copied().unwrap_or(0) + self.docnos.last().map_or(0, |d| d.len() as u32)
    }

    /// The shard of ordinal `o` and its position among that shard's documents.
    fn locate(&self, o: u32) -> (usize, u32) {
        let shard = self.bases.partition_point(|&b| b <= o).saturating_sub(1);
        (shard, o - self.bases.get(shard).copied().unwrap_or(0))
    }

    fn key(&self, o: u32) -> Result<Vec<u8>> {
        let (shard, local) = self.locate(o);
        let docno = self.docnos[shard]
            .get(local as usize)
            .copied()
            .unwrap_or(u64::MAX);
        Ok(self.states[shard]
            .key_of(docno)?
            .map(<[u8]>::to_vec)
            .unwrap_or_default())
    }

    /// True if `a` and `b` share a bucket in a band before `band`.
    fn share_earlier(&self, a: u32, b: u32, band: usize) -> bool {
        share_earlier(&self.bands, a, b, band)
    }
}

/// Per shard, one verifier over its documents (by their position in the shard).
struct Verifiers<'a> {
    index: &'a Index<'a>,
    each: Vec<Verifier<'a>>,
}

impl Verifiers<'_> {
    fn signature(&self, o: u32) -> Option<&[u8]> {
        let (shard, local) = self.index.locate(o);
        self.each.get(shard)?.signature(local)
    }

    fn set(&self, o: u32, out: &mut Vec<u32>) {
        let (shard, local) = self.index.locate(o);
        if let Some(v) = self.each.get(shard) {
            v.set(local, out);
        }
    }

    /// `a` (its signature and, with exact re-rank, its set) against ordinal `b`, compared
    /// by the verifier of `b`'s shard.
    fn similar(&self, a: &[u8], a_set: &[u32], b: u32) -> Option<Scores> {
        let (shard, local) = self.index.locate(b);
        self.each.get(shard)?.similar(a, a_set, local, None)
    }

    fn check(&self) -> Result<()> {
        self.each.iter().try_for_each(Verifier::check)
    }

    fn first(&self) -> Option<&Verifier<'_>> {
        self.each.first()
    }
}

/// A pair verified similar, by ordinal.
struct FoundPair {
    older: u32,
    newer: u32,
    scores: Scores,
}

impl Shards {
    /// Every near-duplicate pair over all shards, as [`Db::dedup_pairs`](crate::db::Db::dedup_pairs)
    /// finds them in the merged index (in the same order): `a` is the older document (shard
    /// order, then insertion order), and a key stored in two shards is the later shard's
    /// document only. Reads one snapshot of each shard.
    pub fn dedup_pairs(
        &self,
        threshold: f64,
        emit: impl FnMut(DedupPair) -> Result<()>,
        progress: impl FnMut(usize, usize),
    ) -> Result<DedupStats> {
        self.dedup_pairs_with_options(threshold, DedupOptions::default(), emit, progress)
    }

    /// [`Shards::dedup_pairs`] with options.
    pub fn dedup_pairs_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        mut emit: impl FnMut(DedupPair) -> Result<()>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<DedupStats> {
        check_threshold(threshold)?;
        let states = self.snapshots();
        let mut stats = DedupStats::default();
        let index = self.bucket_index(&states, &mut stats)?;
        let verify = self.verifiers(&index, threshold, opts)?;
        let bands = index.bands.len();
        for (band, bb) in index.bands.iter().enumerate() {
            progress(band, bands);
            let mut window: Vec<(u32, u32)> = Vec::new();
            let mut comparisons = 0u64;
            for bucket in 0..bb.buckets() as u32 {
                let len = bb.bucket(bucket).len() as u32;
                for first in (0..len.saturating_sub(1)).step_by(ROW_TILE as usize) {
                    window.push((bucket, first));
                    let rows = (ROW_TILE as u32).min(len - 1 - first);
                    comparisons += u64::from(rows) * u64::from(len - first);
                    if comparisons >= PAIR_WINDOW {
                        self.verify_window(&verify, band, &mut window, &mut stats, &mut emit)?;
                        comparisons = 0;
                    }
                }
            }
            self.verify_window(&verify, band, &mut window, &mut stats, &mut emit)?;
        }
        progress(bands, bands);
        Ok(stats)
    }

    /// Star clusters over all shards, as [`Db::for_each_dedup_cluster`](crate::db::Db::for_each_dedup_cluster)
    /// builds them in the merged index: centers oldest first (shard order, then insertion
    /// order), each cluster center first, streamed to `emit`.
    pub fn for_each_dedup_cluster(
        &self,
        threshold: f64,
        emit: impl FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        self.for_each_dedup_cluster_with_options(threshold, DedupOptions::default(), emit)
    }

    /// The clusters of [`Shards::for_each_dedup_cluster`], collected.
    pub fn dedup_clusters(&self, threshold: f64) -> Result<Vec<Vec<Vec<u8>>>> {
        let mut clusters = Vec::new();
        self.for_each_dedup_cluster(threshold, |c| {
            clusters.push(c);
            Ok(())
        })?;
        Ok(clusters)
    }

    /// [`Shards::for_each_dedup_cluster`] with options.
    pub fn for_each_dedup_cluster_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        mut emit: impl FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        check_threshold(threshold)?;
        let states = self.snapshots();
        let mut stats = DedupStats::default();
        let index = self.bucket_index(&states, &mut stats)?;
        let verify = self.verifiers(&index, threshold, opts)?;
        let n = index.len() as usize;
        let mut assigned = vec![false; n];
        let mut seen = vec![0u32; n];
        let mut candidates = Vec::new();
        let mut set_c = Vec::new();
        for center in 0..n as u32 {
            if assigned[center as usize] {
                continue;
            }
            later_unassigned(&index, center, &assigned, &mut seen, &mut candidates);
            if candidates.is_empty() {
                continue;
            }
            let Some(sc) = verify.signature(center) else {
                verify.check()?;
                continue;
            };
            stats.compared += candidates.len() as u64;
            verify.set(center, &mut set_c);
            let take = |chunk: &[u32]| -> Vec<u32> {
                let similar = |&m: &u32| verify.similar(sc, &set_c, m).is_some();
                chunk.iter().copied().filter(similar).collect()
            };
            let mut members = if candidates.len() >= PARALLEL_CANDIDATES {
                candidates.par_chunks(512).flat_map_iter(take).collect()
            } else {
                take(&candidates)
            };
            verify.check()?;
            if members.is_empty() {
                continue;
            }
            members.sort_unstable();
            stats.pairs += members.len() as u64;
            let mut cluster = Vec::with_capacity(members.len() + 1);
            for o in std::iter::once(center).chain(members) {
                assigned[o as usize] = true;
                cluster.push(index.key(o)?);
            }
            emit(cluster)?;
        }
        Ok(stats)
    }

    fn snapshots(&self) -> Vec<State> {
        self.shards
            .iter()
            .map(|db| db.state.read().snapshot())
            .collect()
    }

    fn verifiers<'a>(
        &self,
        index: &'a Index<'a>,
        threshold: f64,
        opts: DedupOptions,
    ) -> Result<Verifiers<'a>> {
        let each = self
            .shards
            .iter()
            .zip(index.states)
            .zip(&index.docnos)
            .map(|((db, state), docnos)| db.verifier(state, docnos, threshold, opts))
            .collect::<Result<Vec<_>>>()?;
        Ok(Verifiers { index, each })
    }

    /// Every shard's band buckets merged into one index over the documents the merged index
    /// would hold, each bucket cut to the bucket cap by the same rule (the members whose
    /// keys hash lowest).
    fn bucket_index<'a>(&self, states: &'a [State], stats: &mut DedupStats) -> Result<Index<'a>> {
        self.params().check_dedup_built()?;
        let bands = self.params().lsh.bands;
        let cap = self.params().bucket_cap.map_or(usize::MAX, |c| c as usize);
        let mut postings = states
            .iter()
            .map(|state| {
                (0..bands)
                    .map(|band| live_postings(state, band))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let stored = postings
            .iter()
            .map(|per_band| docnos_of(per_band))
            .collect();
        let docnos = drop_superseded(states, stored)?;
        let mut bases = Vec::with_capacity(docnos.len());
        let mut total = 0usize;
        for d in &docnos {
            bases.push(total as u32);
            total += d.len();
        }
        if total >= NO_BUCKET as usize {
            return Err(Error::invalid(
                "dedup",
                format!("{total} documents; at most {} supported", NO_BUCKET - 1),
            ));
        }
        let mut hot = vec![Vec::new(); bands];
        for state in states {
            for (band, keys) in segment_hot_keys(state, bands)?.into_iter().enumerate() {
                hot[band].extend(keys);
            }
        }
        let mut index = Index {
            states,
            docnos,
            bases,
            bands: Vec::with_capacity(bands),
        };
        for (band, mut hot) in hot.into_iter().enumerate() {
            hot.sort_unstable();
            hot.dedup();
            stats.capped_buckets += hot.len() as u64;
            let mut merged: Vec<(u32, u32)> = Vec::new();
            for (shard, per_band) in postings.iter_mut().enumerate() {
                let band_postings = std::mem::take(&mut per_band[band]);
                let (docnos, base) = (&index.docnos[shard], index.bases[shard]);
                merged.extend(band_postings.into_iter().filter_map(|(k, d)| {
                    let local = docnos.binary_search(&d).ok()?;
                    Some((k, base + local as u32))
                }));
            }
            // One sorted run per shard: the adaptive merge sort merges them where a
            // quicksort would sort them all over again.
            merged.par_sort();
            let bb = band_buckets(&index, &merged, &hot, total, cap, stats)?;
            index.bands.push(bb);
        }
        Ok(index)
    }

    /// Verifies the row tiles `(bucket, first row)` of `window` (of band `band`) on every
    /// core and emits their pairs in order; empties `window`.
    fn verify_window(
        &self,
        verify: &Verifiers<'_>,
        band: usize,
        window: &mut Vec<(u32, u32)>,
        stats: &mut DedupStats,
        emit: &mut impl FnMut(DedupPair) -> Result<()>,
    ) -> Result<()> {
        let index = verify.index;
        let bb = &index.bands[band];
        let found: Vec<(u64, Vec<FoundPair>)> = window
            .par_iter()
            .flat_map_iter(|&(bucket, first)| verify_rows(verify, band, bb.bucket(bucket), first))
            .collect();
        verify.check()?;
        for (compared, pairs) in found {
            stats.compared += compared;
            for pair in pairs {
                stats.pairs += 1;
                emit(self.dedup_pair(verify, pair)?)?;
            }
        }
        window.clear();
        Ok(())
    }

    /// The pair as reported, as one database reports it.
    fn dedup_pair(&self, verify: &Verifiers<'_>, pair: FoundPair) -> Result<DedupPair> {
        let Scores {
            similarity,
            estimate,
        } = pair.scores;
        let (similarity, distance, cosine) = self.first().describe_estimate(similarity);
        let exact = verify.first().is_some_and(|v| v.exact && estimate < v.sure);
        Ok(DedupPair {
            a: verify.index.key(pair.older)?,
            b: verify.index.key(pair.newer)?,
            similarity,
            metric: self.params().metric(),
            estimate: if distance.is_some() {
                similarity
            } else {
                estimate
            },
            distance,
            cosine,
            exact,
            // Shards band every document: exact copies are grouped within one database only.
            representative: None,
        })
    }
}

/// Rows `first..first + ROW_TILE` of a bucket of `members` (ordinals, oldest first), each
/// compared with the members after it: per row, the comparisons made and the pairs found, in
/// member order. A pair is compared in the first band the two share.
fn verify_rows(
    verify: &Verifiers<'_>,
    band: usize,
    members: &[u32],
    first: u32,
) -> Vec<(u64, Vec<FoundPair>)> {
    let first = first as usize;
    let end = (first + ROW_TILE as usize).min(members.len().saturating_sub(1));
    let mut set = Vec::new();
    (first..end)
        .map(|row| {
            let a = members[row];
            let Some(sa) = verify.signature(a) else {
                return (0, Vec::new());
            };
            verify.set(a, &mut set);
            let mut compared = 0u64;
            let mut pairs = Vec::new();
            for &b in &members[row + 1..] {
                if verify.index.share_earlier(a, b, band) {
                    continue;
                }
                compared += 1;
                if let Some(scores) = verify.similar(sa, &set, b) {
                    pairs.push(FoundPair {
                        older: a,
                        newer: b,
                        scores,
                    });
                }
            }
            (compared, pairs)
        })
        .collect()
}

/// The unassigned members after `center` of its buckets, each once, into `candidates`.
fn later_unassigned(
    index: &Index<'_>,
    center: u32,
    assigned: &[bool],
    seen: &mut [u32],
    candidates: &mut Vec<u32>,
) {
    candidates.clear();
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
        let later = members.partition_point(|&m| m <= center);
        for &m in &members[later..] {
            if !assigned[m as usize] && seen[m as usize] != center + 1 {
                seen[m as usize] = center + 1;
                candidates.push(m);
            }
        }
    }
}

/// Every docno of one shard's postings, ascending.
fn docnos_of(per_band: &[Vec<(u32, u64)>]) -> Vec<u64> {
    let mut docnos: Vec<u64> = per_band.iter().flatten().map(|&(_, d)| d).collect();
    docnos.par_sort_unstable();
    docnos.dedup();
    docnos
}

/// Each shard's docnos less those whose key a later shard stores too: documents are sorted
/// by key hash, and only equal hashes in different shards compare their keys.
fn drop_superseded(states: &[State], stored: Vec<Vec<u64>>) -> Result<Vec<Vec<u64>>> {
    let mut by_hash: Vec<(u64, u32, u64)> = Vec::new();
    for (shard, (state, docnos)) in states.iter().zip(&stored).enumerate() {
        let hashed = docnos
            .par_iter()
            .map(|&d| Ok((state.key_of(d)?.map_or(u64::MAX, cap_rank), shard as u32, d)))
            .collect::<Result<Vec<_>>>()?;
        by_hash.extend(hashed);
    }
    by_hash.par_sort_unstable();
    let mut superseded: Vec<(u32, u64)> = Vec::new();
    for run in by_hash.chunk_by(|x, y| x.0 == y.0) {
        if run.len() < 2 || run.first().map(|r| r.1) == run.last().map(|r| r.1) {
            continue;
        }
        for (i, &(_, shard, d)) in run.iter().enumerate() {
            let key = states[shard as usize].key_of(d)?;
            for &(_, later, e) in &run[i + 1..] {
                if later > shard && states[later as usize].key_of(e)? == key {
                    superseded.push((shard, d));
                    break;
                }
            }
        }
    }
    superseded.sort_unstable();
    Ok(stored
        .into_iter()
        .enumerate()
        .map(|(shard, docnos)| {
            docnos
                .into_iter()
                .filter(|&d| superseded.binary_search(&(shard as u32, d)).is_err())
                .collect()
        })
        .collect())
}

/// One band's buckets of two or more documents from its sorted `postings` (key32,
/// ordinal), each cut to the `cap` members whose keys hash lowest; a cut bucket not in `hot`
/// (sorted: those a segment cut already, counted) is counted in `stats`.
fn band_buckets(
    index: &Index<'_>,
    postings: &[(u32, u32)],
    hot: &[u32],
    total: usize,
    cap: usize,
    stats: &mut DedupStats,
) -> Result<BandBuckets> {
    let mut bb = BandBuckets {
        members: Vec::new(),
        starts: vec![0],
        bucket_of: vec![NO_BUCKET; total],
    };
    for run in postings.chunk_by(|x, y| x.0 == y.0) {
        if run.len() < 2 {
            continue;
        }
        let bucket = bb.buckets() as u32;
        let mut members: Vec<u32> = if run.len() > cap {
            if hot.binary_search(&run[0].0).is_err() {
                stats.capped_buckets += 1;
            }
            let mut ranked: Vec<(u64, u64)> = run
                .iter()
                .map(|&(_, o)| Ok((cap_rank(&index.key(o)?), u64::from(o))))
                .collect::<Result<_>>()?;
            keep_lowest_ranked(&mut ranked, cap);
            ranked.into_iter().map(|(_, o)| o as u32).collect()
        } else {
            run.iter().map(|&(_, o)| o).collect()
        };
        members.sort_unstable();
        for &m in &members {
            bb.bucket_of[m as usize] = bucket;
        }
        bb.members.extend(members);
        bb.starts.push(bb.members.len() as u32);
    }
    Ok(bb)
}
