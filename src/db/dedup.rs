//! All-pairs near-duplicate detection inside one database. Every band's buckets are read
//! once into a compact index (documents by dense ordinal, buckets as ordinal lists), then:
//!
//! * pairs: each pair sharing a bucket is verified in the first band where it shares one
//!   (so it is compared and reported once, without remembering the pairs reported), and
//!   streamed out a bounded window at a time;
//! * clusters: star clusters, built greedily oldest first; a document already in a cluster is
//!   never compared again, so a hot bucket of near-copies costs about one comparison per
//!   member instead of one per pair, and no pair is ever stored.
//!
//! Exact copies (documents with equal exact hashes) are grouped first (`dedup_exact.rs`): in
//! the band buckets each copy counts as its group's representative, and the other members are
//! reported at similarity 1 to it, so a copy-heavy corpus costs a pass over its distinct texts.
//!
//! Memory is about 12 bytes per document and band (plus the postings of the bands being read
//! while the index is built), whatever the number of pairs. Buckets larger than the bucket cap keep the `cap`
//! members whose keys hash lowest: the choice depends on the documents only, not on the order
//! they were added, so shards built apart and one database cap the same documents (within
//! segments, which compaction already capped when it wrote them).

use rayon::prelude::*;

use super::Db;
use super::dedup_exact::{CopyGrouping, CopyOrdinals, ExactCopies, PairSide};
use super::dedup_scan::scan_bands;
use super::dedup_verify::{DecodedOnce, Scores, Verifier};
use super::metric::Metric;
use super::state::State;
use crate::storage::segment::{band_key32, cap_rank, keep_lowest_ranked};
use crate::{Error, Result};
use clusters::{CENTER_BLOCK, Clustering};

/// One verified near-duplicate pair (`a` is the older document).
#[derive(Clone, Debug, PartialEq)]
pub struct DedupPair {
    /// Key of the older document.
    pub a: Vec<u8>,
    /// Key of the newer document.
    pub b: Vec<u8>,
    /// The pair's similarity, in `metric`. Jaccard: exact (from the stored shingle sets)
    /// when [`DedupPair::exact`], otherwise the estimate from the signatures. Cosine: the
    /// estimate `cos(π·distance/64)`, as in `cosine`.
    pub similarity: f64,
    /// The metric `similarity` is in: the index's ([`IndexParams::metric`](super::IndexParams::metric)).
    pub metric: Metric,
    /// The similarity estimated from the stored signatures: the b-bit Jaccard estimate
    /// (Jaccard), or the cosine estimate, as `similarity` (cosine).
    pub estimate: f64,
    /// SimHash index: the Hamming distance between the fingerprints (`None` for MinHash).
    pub distance: Option<u32>,
    /// SimHash index: the cosine estimate `cos(π·distance/64)` (`None` for MinHash).
    pub cosine: Option<f64>,
    /// True when `similarity` is an exact Jaccard: the pass re-ranked and the pair's estimate
    /// came within the re-rank margin of the threshold (above it the estimate decides).
    pub exact: bool,
    /// For an exact copy reported without banding (similarity 1): the side, `a` or `b`, that
    /// represented the copies in the band scan, whose fate the other takes. `None` for a pair
    /// found in the band buckets.
    pub representative: Option<PairSide>,
}

/// How a dedup pass decides similarity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupOptions {
    /// In an index that stores shingle sets, decide by the signature estimate alone (skip the
    /// exact re-rank).
    pub estimate_only: bool,
    /// Which member of a group of exact copies is banded and stands for the others (a pass
    /// over clusters always takes the oldest: it visits documents oldest first).
    pub copies: CopyGrouping,
}

/// What a dedup pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Candidate pairs compared (each pair at most once, in the first band it shares).
    pub compared: u64,
    /// Distinct pairs at or above the threshold.
    pub pairs: u64,
    /// Band buckets larger than the bucket cap (each was cut to the cap, here or when its
    /// segment was written).
    pub capped_buckets: u64,
    /// Exact copies reported at similarity 1 to their group's representative, without
    /// banding: each is one pair (or cluster member) of `pairs`.
    pub exact_copies: u64,
}

/// One row's verification: the comparisons made and the pairs found.
#[derive(Clone, Debug, Default)]
struct RowResult {
    compared: u64,
    pairs: Vec<FoundPair>,
}

/// A pair verified similar, by ordinal.
#[derive(Clone, Copy, Debug)]
struct FoundPair {
    older: u32,
    newer: u32,
    scores: Scores,
}

/// Rows `first..first + rows` of bucket `bucket`, verified together (`verify_rows`); they make
/// `comparisons` comparisons.
#[derive(Clone, Copy, Debug)]
struct RowTile {
    bucket: u32,
    first: u32,
    rows: u32,
    comparisons: u64,
}

/// A bucket membership that does not exist (the document is alone in its bucket, or was cut
/// by the cap).
pub(super) const NO_BUCKET: u32 = u32::MAX;

/// Comparisons verified together (in parallel) before their pairs are written out: bounds the
/// pairs held in memory whatever the size of a bucket.
pub(super) const PAIR_WINDOW: u64 = 1 << 18;

/// Rows of a bucket verified together in a pass over pairs: their signatures and decoded sets
/// are held, and each later member's stored set is decoded once for all of them instead of
/// once per row.
pub(super) const ROW_TILE: u64 = 16;

/// A center's candidates from which its verification is spread over every core.
pub(super) const PARALLEL_CANDIDATES: usize = 2048;

/// One band's buckets of two or more documents.
pub(super) struct BandBuckets {
    /// Members of every bucket, by ordinal, ascending within a bucket; bucket `i` is
    /// `members[starts[i]..starts[i + 1]]`.
    pub(super) members: Vec<u32>,
    pub(super) starts: Vec<u32>,
    /// The bucket of each ordinal, or [`NO_BUCKET`].
    pub(super) bucket_of: Vec<u32>,
}

impl BandBuckets {
    pub(super) fn bucket(&self, i: u32) -> &[u32] {
        let i = i as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&s), Some(&e)) => self.members.get(s as usize..e as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    pub(super) fn buckets(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }
}

/// Every live document's band buckets, read from one snapshot.
struct BucketIndex {
    /// Docno of each ordinal, ascending (so ordinal order is age order).
    docnos: Vec<u64>,
    bands: Vec<BandBuckets>,
    /// The exact copies (each in `bands` through its representative).
    copies: CopyOrdinals,
}

impl BucketIndex {
    /// The key of ordinal `o`.
    fn key(&self, state: &State, o: u32) -> Result<Vec<u8>> {
        let docno = self.docnos.get(o as usize).copied().unwrap_or(u64::MAX);
        match state.key_of(docno)? {
            Some(key) => Ok(key.to_vec()),
            None => Err(Error::invalid(
                "dedup",
                format!("document {docno} has no key in the pass (an internal error)"),
            )),
        }
    }

    /// The keys of `ordinals`.
    fn keys(&self, state: &State, ordinals: &[u32]) -> Result<Vec<Vec<u8>>> {
        ordinals.iter().map(|&o| self.key(state, o)).collect()
    }

    /// True if `a` and `b` share a bucket in a band before `band`.
    fn share_earlier(&self, a: u32, b: u32, band: usize) -> bool {
        share_earlier(&self.bands, a, b, band)
    }
}

/// True if ordinals `a` and `b` share a bucket in one of `bands` before `band`: the pair was
/// then verified in that band already.
pub(super) fn share_earlier(bands: &[BandBuckets], a: u32, b: u32, band: usize) -> bool {
    bands.iter().take(band).any(|bb| {
        let x = bb.bucket_of.get(a as usize).copied().unwrap_or(NO_BUCKET);
        x != NO_BUCKET && Some(&x) == bb.bucket_of.get(b as usize)
    })
}

/// A row of a tile.
struct TileRow<'a> {
    ordinal: u32,
    /// Its stored signature (`None` when it compares with no later member in this band, or
    /// could not be read: the verifier then holds the error).
    signature: Option<&'a [u8]>,
    /// Its decoded set (with exact re-rank).
    set: Vec<u32>,
}

/// The row tiles of a band's buckets: a row compares one member with the later ones, and
/// [`ROW_TILE`] rows are verified together.
fn row_tiles(bb: &BandBuckets) -> impl Iterator<Item = RowTile> + '_ {
    (0..bb.buckets() as u32).flat_map(move |bucket| {
        let len = bb.bucket(bucket).len() as u64;
        (0..len.saturating_sub(1))
            .step_by(ROW_TILE as usize)
            .map(move |first| {
                let rows = ROW_TILE.min(len - 1 - first);
                RowTile {
                    bucket,
                    first: first as u32,
                    rows: rows as u32,
                    // Row `row` compares with the `len - row - 1` later members.
                    comparisons: (first..first + rows).map(|row| len - row - 1).sum(),
                }
            })
    })
}

/// Rows `first..first + rows` of a bucket of `members` (ordinals, oldest first) compared with
/// the members after them: per row, the comparisons made and the pairs found, in member order
/// (as row by row). A pair is compared in the first band the two share.
fn verify_rows(
    verify: &Verifier<'_>,
    index: &BucketIndex,
    band: usize,
    members: &[u32],
    first: u32,
    rows: u32,
) -> Vec<RowResult> {
    let first = first as usize;
    let tile: Vec<TileRow<'_>> = members
        .get(first..first + rows as usize)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, &ordinal)| {
            // A row whose every pair was compared in an earlier band reads nothing: on a
            // database larger than the page cache, each signature read is a disk read.
            let later = members.get(first + i + 1..).unwrap_or_default();
            let compares = later
                .iter()
                .any(|&b| !index.share_earlier(ordinal, b, band));
            let signature = compares.then(|| verify.signature(ordinal)).flatten();
            let mut set = Vec::new();
            if signature.is_some() {
                verify.set(ordinal, &mut set);
            }
            TileRow {
                ordinal,
                signature,
                set,
            }
        })
        .collect();
    let mut results: Vec<RowResult> = vec![RowResult::default(); tile.len()];
    let mut column = DecodedOnce::default();
    for (col, &b) in members.iter().enumerate().skip(first + 1) {
        column.clear();
        for (row, result) in tile.iter().zip(&mut results).take(col - first) {
            let Some(sa) = row.signature else {
                continue;
            };
            if index.share_earlier(row.ordinal, b, band) {
                continue;
            }
            result.compared += 1;
            if let Some(scores) = verify.similar(sa, &row.set, b, Some(&mut column)) {
                result.pairs.push(FoundPair {
                    older: row.ordinal,
                    newer: b,
                    scores,
                });
            }
        }
    }
    results
}

impl Db {
    /// Calls `emit` once for every unordered pair of live documents whose estimated Jaccard is
    /// at least `threshold` and that share at least one band bucket. The number of pairs can
    /// grow with the square of a bucket's size (a thousand copies of one page are half a
    /// million pairs); they are streamed, never held: memory is about 12 bytes per document and
    /// band. The pass reads a snapshot taken when it starts: writers, flushes and compactions
    /// go on meanwhile and are not seen.
    ///
    /// In an index that stores shingle sets, pairs are decided and reported by their exact
    /// Jaccard ([`Db::dedup_pairs_with_options`] can turn that off).
    pub fn dedup_pairs(
        &self,
        threshold: f64,
        emit: impl FnMut(DedupPair) -> Result<()>,
        progress: impl FnMut(usize, usize),
    ) -> Result<DedupStats> {
        self.dedup_pairs_with_options(threshold, DedupOptions::default(), emit, progress)
    }

    /// [`Db::dedup_pairs`] with options.
    pub fn dedup_pairs_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        mut emit: impl FnMut(DedupPair) -> Result<()>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<DedupStats> {
        check_threshold(threshold)?;
        let state = self.state.read().snapshot();
        let mut stats = DedupStats::default();
        let index = self.bucket_index(&state, opts.copies, &mut stats)?;
        let verify = self.verifier(&state, &index.docnos, threshold, opts)?;
        let pass = PairPass {
            db: self,
            state: &state,
            index: &index,
            verify: &verify,
        };
        pass.emit_copies(&mut stats, &mut emit)?;
        let bands = index.bands.len();
        for (band, bb) in index.bands.iter().enumerate() {
            progress(band, bands);
            // Tiles are verified a window of about PAIR_WINDOW comparisons at a time.
            let mut window: Vec<RowTile> = Vec::new();
            let mut comparisons = 0u64;
            for tile in row_tiles(bb) {
                window.push(tile);
                comparisons += tile.comparisons;
                if comparisons >= PAIR_WINDOW {
                    pass.verify_window(band, bb, &mut window, &mut stats, &mut emit)?;
                    comparisons = 0;
                }
            }
            pass.verify_window(band, bb, &mut window, &mut stats, &mut emit)?;
        }
        progress(bands, bands);
        Ok(stats)
    }

    /// Groups near-duplicates into clusters without chaining: documents are visited oldest
    /// first; an unassigned document becomes a cluster's center and takes every unassigned
    /// document verified similar to it (among those sharing a band bucket with it). Every
    /// member is therefore within the threshold of its center, never linked only through a
    /// long path. Clusters are returned with the center first (the document to keep), members
    /// by age; singletons are omitted. Like [`Db::dedup_pairs`], it reads a snapshot taken
    /// when it starts, and holds no pairs: a document in a cluster is never compared again.
    pub fn dedup_clusters(&self, threshold: f64) -> Result<Vec<Vec<Vec<u8>>>> {
        let mut clusters = Vec::new();
        self.for_each_dedup_cluster(threshold, |c| {
            clusters.push(c);
            Ok(())
        })?;
        Ok(clusters)
    }

    /// The clusters of [`Db::dedup_clusters`], streamed: `emit` gets each cluster (center
    /// first) as soon as it is complete, in the order of their centers' age. Returns what the
    /// pass did.
    pub fn for_each_dedup_cluster(
        &self,
        threshold: f64,
        emit: impl FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        self.for_each_dedup_cluster_with_options(threshold, DedupOptions::default(), emit)
    }

    /// [`Db::for_each_dedup_cluster`] with options.
    pub fn for_each_dedup_cluster_with_options(
        &self,
        threshold: f64,
        opts: DedupOptions,
        mut emit: impl FnMut(Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<DedupStats> {
        check_threshold(threshold)?;
        let state = self.state.read().snapshot();
        let mut stats = DedupStats::default();
        let grouping = match opts.copies {
            CopyGrouping::Off => CopyGrouping::Off,
            _ => CopyGrouping::Oldest,
        };
        let index = self.bucket_index(&state, grouping, &mut stats)?;
        let verify = self.verifier(&state, &index.docnos, threshold, opts)?;
        let n = index.docnos.len() as u32;
        let mut clustering = Clustering::new(index.docnos.len());
        let mut block_start = 0u32;
        while block_start < n {
            let block_end = block_start.saturating_add(CENTER_BLOCK).min(n);
            let found = clustering.block(&index, &verify, block_start..block_end);
            verify.check()?;
            block_start = block_end;
            for (center, compared, members) in found {
                // Taken by a center of this block before it: its speculative work is void.
                if clustering.is_assigned(center) {
                    continue;
                }
                stats.compared += compared;
                let members: Vec<u32> = members
                    .into_iter()
                    .filter(|&m| !clustering.is_assigned(m))
                    .collect();
                let star = clustering.star(&index, center, members, &mut stats);
                if !star.is_empty() {
                    emit(index.keys(&state, &star)?)?;
                }
            }
        }
        Ok(stats)
    }

    /// Reads every band's buckets of live documents into a [`BucketIndex`], cutting buckets
    /// larger than the bucket cap to the members whose keys hash lowest.
    fn bucket_index(
        &self,
        state: &State,
        grouping: CopyGrouping,
        stats: &mut DedupStats,
    ) -> Result<BucketIndex> {
        self.params.check_dedup_built()?;
        let bands = self.params.lsh.bands;
        let cap = self.params.bucket_cap.map_or(usize::MAX, |c| c as usize);
        let copies = ExactCopies::group(state, self.columns.exact, grouping)?;
        let scanned = scan_bands(state, bands, &copies)?;
        let docnos = check_ordinals(scanned.docnos)?;
        let hot_keys = segment_hot_keys(state, bands)?;
        // Each band's buckets on every core, each counting the buckets it cuts.
        let built = scanned
            .shared
            .into_par_iter()
            .zip(hot_keys)
            .map(|(postings, mut hot)| {
                hot.sort_unstable();
                hot.dedup();
                let mut cut = DedupStats::default();
                let bb = band_buckets(state, &postings, &hot, &docnos, &copies, cap, &mut cut)?;
                Ok((bb, hot.len() as u64 + cut.capped_buckets))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(bands);
        for (bb, capped) in built {
            stats.capped_buckets += capped;
            out.push(bb);
        }
        let copies = copies.by_ordinal(|d| ordinal_of(&docnos, d))?;
        Ok(BucketIndex {
            docnos,
            bands: out,
            copies,
        })
    }
}

/// (key32, docno) of every live document in `band`, sorted, each once.
pub(super) fn live_postings(state: &State, band: usize) -> Result<Vec<(u32, u64)>> {
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
    // Each segment's postings come sorted (the in-memory tables' follow unsorted): the
    // stable sort finds those runs and merges them, in a few linear passes, where a
    // quicksort would sort them all over again (most of a dedup's time).
    if !postings.is_sorted() {
        postings.sort();
    }
    postings.dedup();
    Ok(postings)
}

/// The ordinal of `docno` in the pass's `docnos`, which hold every docno the pass can meet.
fn ordinal_of(docnos: &[u64], docno: u64) -> Result<u32> {
    match docnos.binary_search(&docno) {
        Ok(o) => Ok(o as u32),
        Err(_) => Err(Error::invalid(
            "dedup",
            format!("document {docno} is missing from the pass (an internal error)"),
        )),
    }
}

/// The docno of each ordinal, `docnos` (ascending, so ordinal order is age order), once
/// there are few enough for a 32-bit ordinal.
fn check_ordinals(docnos: Vec<u64>) -> Result<Vec<u64>> {
    if docnos.len() >= NO_BUCKET as usize {
        return Err(Error::invalid(
            "dedup",
            format!(
                "{} documents; at most {} supported",
                docnos.len(),
                NO_BUCKET - 1
            ),
        ));
    }
    Ok(docnos)
}

/// Per band, the key32 of the buckets a segment already cut when it was written: they count
/// as capped too (the same rule, so the count does not depend on what was flushed when).
pub(super) fn segment_hot_keys(state: &State, bands: usize) -> Result<Vec<Vec<u32>>> {
    let mut hot_keys: Vec<Vec<u32>> = vec![Vec::new(); bands];
    for seg in &state.version.segments {
        for h in seg.seg.hot_buckets() {
            let h = h?;
            if let Some(keys) = hot_keys.get_mut(h.band as usize) {
                keys.push(h.key32);
            }
        }
    }
    Ok(hot_keys)
}

/// One band's buckets of two or more documents from its sorted `postings`, each cut to the
/// `cap` members whose keys hash lowest; a cut bucket not in `hot` (sorted: those a segment
/// cut already, counted) is counted in `stats`.
fn band_buckets(
    state: &State,
    postings: &[(u32, u64)],
    hot: &[u32],
    docnos: &[u64],
    copies: &ExactCopies,
    cap: usize,
    stats: &mut DedupStats,
) -> Result<BandBuckets> {
    // A copy is in its bucket through its representative.
    let ordinal = |d: u64| ordinal_of(docnos, copies.standing_for(d));
    // Live keys are unique, and a document keeps its key wherever it is stored.
    let key_rank = |d: u64| -> Result<u64> { Ok(state.key_of(d)?.map_or(u64::MAX, cap_rank)) };
    let mut bb = BandBuckets {
        members: Vec::new(),
        starts: vec![0],
        bucket_of: vec![NO_BUCKET; docnos.len()],
    };
    for run in postings.chunk_by(|x, y| x.0 == y.0) {
        if run.len() < 2 {
            continue;
        }
        let bucket = (bb.starts.len() - 1) as u32;
        let mut members: Vec<u32> = if run.len() > cap {
            if hot.binary_search(&run[0].0).is_err() {
                stats.capped_buckets += 1;
            }
            let mut ranked: Vec<(u64, u64)> = run
                .iter()
                .map(|&(_, d)| Ok((key_rank(d)?, d)))
                .collect::<Result<_>>()?;
            keep_lowest_ranked(&mut ranked, cap);
            ranked
                .into_iter()
                .map(|(_, d)| ordinal(d))
                .collect::<Result<_>>()?
        } else {
            run.iter()
                .map(|&(_, d)| ordinal(d))
                .collect::<Result<_>>()?
        };
        members.sort_unstable();
        members.dedup();
        if members.len() < 2 {
            continue;
        }
        for &m in &members {
            if let Some(b) = bb.bucket_of.get_mut(m as usize) {
                *b = bucket;
            }
        }
        bb.members.extend(members);
        bb.starts.push(bb.members.len() as u32);
    }
    Ok(bb)
}

/// One pass over pairs: what verifies a window of row tiles and turns its pairs into
/// [`DedupPair`]s.
struct PairPass<'a> {
    db: &'a Db,
    state: &'a State,
    index: &'a BucketIndex,
    verify: &'a Verifier<'a>,
}

impl PairPass<'_> {
    /// Verifies the row tiles of `window` (of band `band`, whose buckets are `bb`) on every
    /// core and emits their pairs in order; empties `window`.
    fn verify_window(
        &self,
        band: usize,
        bb: &BandBuckets,
        window: &mut Vec<RowTile>,
        stats: &mut DedupStats,
        emit: &mut impl FnMut(DedupPair) -> Result<()>,
    ) -> Result<()> {
        let found: Vec<RowResult> = window
            .par_iter()
            .flat_map_iter(|tile| {
                let members = bb.bucket(tile.bucket);
                verify_rows(
                    self.verify,
                    self.index,
                    band,
                    members,
                    tile.first,
                    tile.rows,
                )
            })
            .collect();
        self.verify.check()?;
        for row in found {
            stats.compared += row.compared;
            for pair in row.pairs {
                stats.pairs += 1;
                emit(self.dedup_pair(pair)?)?;
            }
        }
        window.clear();
        Ok(())
    }

    /// Emits every exact copy paired with its representative at similarity 1 (a star per
    /// group, not every pair of its members).
    fn emit_copies(
        &self,
        stats: &mut DedupStats,
        emit: &mut impl FnMut(DedupPair) -> Result<()>,
    ) -> Result<()> {
        let identical = Scores {
            similarity: 1.0,
            estimate: 1.0,
        };
        for &(rep, copy) in &self.index.copies.pairs {
            let (older, newer, side) = if rep < copy {
                (rep, copy, PairSide::A)
            } else {
                (copy, rep, PairSide::B)
            };
            let found = FoundPair {
                older,
                newer,
                scores: identical,
            };
            let pair = DedupPair {
                representative: Some(side),
                ..self.dedup_pair(found)?
            };
            emit(pair)?;
        }
        stats.exact_copies += self.index.copies.len();
        stats.pairs += self.index.copies.len();
        Ok(())
    }

    /// The pair as reported: keys, and the similarity described for the index's kind.
    fn dedup_pair(&self, pair: FoundPair) -> Result<DedupPair> {
        let Scores {
            similarity,
            estimate,
        } = pair.scores;
        let (similarity, distance, cosine) = self.db.describe_estimate(similarity);
        Ok(DedupPair {
            a: self.index.key(self.state, pair.older)?,
            b: self.index.key(self.state, pair.newer)?,
            similarity,
            metric: self.db.params.metric(),
            estimate: if distance.is_some() {
                similarity
            } else {
                estimate
            },
            distance,
            cosine,
            exact: self.verify.exact && estimate < self.verify.sure,
            representative: None,
        })
    }
}

pub(super) fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            "threshold",
            format!("must be in (0, 1], got {threshold}"),
        ))
    }
}

#[path = "dedup_clusters.rs"]
mod clusters;

#[cfg(test)]
#[path = "dedup_tests.rs"]
mod tests;
