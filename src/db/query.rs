//! Queries: band keys → candidates (the recall stage) → verification against stored
//! signatures (the precision stage); one at a time or as a batch (streams of queries are in
//! `query_stream.rs`).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::Db;
use super::rerank::{RerankWindow, exact_at_least, rerank_chunk};
use super::state::State;
use crate::sketch::{Signature, bbit};
use crate::{Error, Result};

/// A band's bucket lookups that take this long (plus 2 µs per segment) waited for the disk
/// (one lookup from the page cache takes about a microsecond).
const COLD_LOOKUP: Duration = Duration::from_micros(20);

/// What decoding one posting may take before a lookup counts as waiting for the disk: a hot
/// bucket's thousands of postings take tens of microseconds from memory, and must not be
/// taken for a cold page cache (which would turn every candidate into a `madvise` call).
const POSTING_DECODE: Duration = Duration::from_nanos(50);

/// Distinct candidates from which one query's verification is spread over every core. Below,
/// handing work to the other threads costs more than it saves: waking a sleeping worker from a
/// caller outside the pool took 0.1-0.3 ms on the project's 2-core VM, while verifying a
/// candidate takes ~50-150 ns (measured: 3,600-candidate queries ran 1.4-1.9× faster one at a time
/// with 8,192 here than with 2,048; BENCHMARKS.md, "Hot data, fifth round").
const PARALLEL_CANDIDATES: usize = 8192;

/// Matches from which one query resolves its keys on every core (a key costs ~100 ns: the same
/// reasoning as [`PARALLEL_CANDIDATES`]).
const PARALLEL_MATCHES: usize = 4096;

/// Candidates (or matches) per parallel task.
const PARALLEL_CHUNK: usize = 512;

/// A match decided: (docno, similarity reported, estimate, whether the similarity is exact,
/// its key when verification read it on the way).
type Decided<'a> = (u64, f64, f64, bool, Option<&'a [u8]>);

/// What a query asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryOptions {
    /// Minimum estimated Jaccard of a match; `None` uses the database's threshold.
    pub threshold: Option<f64>,
    /// Keep only the best `limit` matches of those at or above the threshold; `None` keeps
    /// all.
    pub limit: Option<usize>,
    /// In an index that stores shingle sets, skip the exact re-rank: matches are decided and
    /// reported by the signature estimate alone (as in an index without sets).
    pub estimate_only: bool,
    /// Top-k: the `top` most similar documents, best first, without a threshold: down to
    /// `threshold` when one is given, else to [`TOP_K_FLOOR`](super::TOP_K_FLOOR). Probes
    /// beyond the bands when they cannot be trusted for `top` documents (see `db/top_k.rs`).
    pub top: Option<usize>,
}

/// One match.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// The stored key.
    pub key: Vec<u8>,
    /// The Jaccard similarity: exact, from the stored shingle sets, when [`Match::exact`];
    /// otherwise the estimate (SimHash index: the cosine estimate, as in `cosine`).
    pub jaccard: f64,
    /// The Jaccard similarity estimated from the stored b-bit signature (SimHash index: as
    /// `jaccard`).
    pub estimate: f64,
    /// SimHash index: the Hamming distance between the fingerprints (`None` for MinHash).
    pub distance: Option<u32>,
    /// SimHash index: the cosine estimate `cos(π·distance/64)` (`None` for MinHash).
    pub cosine: Option<f64>,
    /// True when `jaccard` is exact: the query was re-ranked and this match's estimate came
    /// within the re-rank margin of the threshold (above it, the estimate alone decides,
    /// wrongly with probability below 0.14 %, and is what is reported).
    pub exact: bool,
}

/// Where a query spent its effort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Distinct candidate documents gathered from band buckets.
    pub candidates: usize,
    /// Candidates whose signature was compared (live ones).
    pub verified: usize,
    /// Band buckets hit that were capped (cut to the bucket cap when a segment was written, or
    /// here, where every source together held more): their lists are truncated.
    pub hot_buckets: usize,
    /// Segments probed.
    pub segments: usize,
    /// True when the query was re-ranked: candidates near the threshold were decided by the
    /// exact Jaccard of stored shingle sets.
    pub exact: bool,
    /// Candidates whose exact Jaccard was computed (their estimate came within the re-rank
    /// margin of the threshold, either side, `rerank.rs`).
    pub reranked: usize,
    /// Top-k only: live documents scored by the exhaustive probe (0 when the bands sufficed).
    pub probed: usize,
}

/// Matches, best first (ties by key), and diagnostics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryResult {
    /// The matches.
    pub matches: Vec<Match>,
    /// Diagnostics.
    pub stats: QueryStats,
}

impl Db {
    /// Documents similar to `sig`.
    ///
    /// The signature of a text without shingles (empty, or white space only: the *empty-set
    /// signature*, [`Signature::is_empty_set`]) is similar to nothing: it has no matches, not
    /// even a stored document that is empty too.
    pub fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        if self.params.sim_params().is_some() {
            return self.query_fingerprint(sig, opts);
        }
        let threshold = opts.threshold.unwrap_or(self.params.threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in [0, 1], got {threshold}"),
            ));
        }
        self.check_signature(sig)?;
        if sig.is_empty_set() {
            return Ok(QueryResult::default());
        }
        let band_keys = self.banding.band_keys(sig.slots())?;
        let packed = bbit::pack(sig.slots(), self.params.bits)?;
        // Exact re-rank needs the query's own set: a query by bare signature is estimated.
        let exact = sig
            .shingle_set()
            .filter(|_| self.params.store_sets && !opts.estimate_only)
            .map(|s| s.values());
        let state = self.state.read();
        if let Some(k) = opts.top {
            let floor = opts.threshold.unwrap_or(super::TOP_K_FLOOR);
            let mut result = self.run_top_k(&state, &band_keys, &packed, k, floor, exact)?;
            result.matches.truncate(opts.limit.unwrap_or(usize::MAX));
            return Ok(result);
        }
        self.run_query(&state, &band_keys, &packed, threshold, exact, opts.limit)
    }

    /// Documents similar to `text`.
    pub fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        self.query(&self.sketch_text(text)?, opts)
    }

    /// Many queries, answered on every core.
    pub fn query_batch(&self, sigs: &[Signature], opts: &QueryOptions) -> Result<Vec<QueryResult>> {
        sigs.par_iter().map(|s| self.query(s, opts)).collect()
    }

    pub(super) fn run_query<'s>(
        &self,
        state: &'s State,
        band_keys: &[u64],
        packed: &'s [u8],
        threshold: f64,
        exact: Option<&[u32]>,
        limit: Option<usize>,
    ) -> Result<QueryResult> {
        let mut stats = QueryStats::default();
        let mut candidates = scratch::take();
        let version = &state.version;
        // Lookups that waited for the disk so far: the first starts prefetching the later
        // lookups; a second confirms a cold page cache (one slow band alone may be this thread
        // losing the core on a busy machine) and the candidates' documents are prefetched too.
        let mut slow_lookups = 0u32;
        // A slow band counts only once the thread is seen waiting for the disk (a major page
        // fault): on a busy machine a warm query is often slow merely for losing its core, and
        // prefetching its thousands of candidates (two `madvise` calls each) would then be
        // most of its time.
        let mut faulted = false;
        let record_bytes = self.params.sig_bytes();
        // A band's lookups (one per segment) take about a microsecond each from the page
        // cache; far longer means they waited for the disk.
        let cold_band = COLD_LOOKUP + Duration::from_micros(2) * version.segments.len() as u32;
        let mut last = Instant::now();
        // Candidates gathered when the clock was last read.
        let mut gathered = 0usize;
        for (band, &bk) in band_keys.iter().enumerate() {
            for seg in &version.segments {
                seg.seg.cache_bucket_directory(band, bk);
            }
        }
        // Where each segment's postings of the current band start and end in `candidates`.
        let mut from_segments: Vec<(usize, usize, usize)> =
            Vec::with_capacity(version.segments.len());
        for (band, &bk) in band_keys.iter().enumerate() {
            if let Some(&next) = band_keys.get(band + 1) {
                for seg in &version.segments {
                    seg.seg.cache_bucket_entries(band + 1, next);
                }
            }
            let band_start = candidates.len();
            let mut band_hot = false;
            state.mem.bucket_into(band, bk, &mut candidates);
            if let Some(imm) = &state.imm {
                imm.bucket_into(band, bk, &mut candidates);
            }
            from_segments.clear();
            for (i, seg) in version.segments.iter().enumerate() {
                let seg_start = candidates.len();
                seg.seg.postings_into(band, bk, &mut candidates)?;
                from_segments.push((i, seg_start, candidates.len()));
                if seg.seg.hot_count() > 0 && seg.seg.hot_bucket(band, bk)?.is_some() {
                    stats.hot_buckets += 1;
                    band_hot = true;
                }
                // The first band's lookups are timed one by one, so that a cold query starts
                // prefetching after its first disk wait even with many segments.
                if band == 0 && slow_lookups == 0 && i + 1 < version.segments.len() {
                    let now = Instant::now();
                    let decoding = POSTING_DECODE * (candidates.len() - gathered) as u32;
                    if now.duration_since(last) >= COLD_LOOKUP + decoding
                        && (faulted || disk_waited())
                    {
                        faulted = true;
                        slow_lookups += 1;
                        prefetch_lookups(version, band_keys, 0);
                    }
                    last = now;
                    gathered = candidates.len();
                }
            }
            if let Some(cap) = self.params.bucket_cap
                && super::query_cap::cap_band(
                    state,
                    &mut candidates,
                    band_start,
                    cap as usize,
                    (band, bk),
                    &from_segments,
                )?
                && !band_hot
            {
                stats.hot_buckets += 1;
            }
            if slow_lookups < 2 {
                // Then one clock read per band (clock reads are most of a warm query's fixed
                // cost).
                let now = Instant::now();
                let decoding = POSTING_DECODE * candidates.len().saturating_sub(gathered) as u32;
                if now.duration_since(last) >= cold_band + decoding && (faulted || disk_waited()) {
                    // This band waited for the disk: the page cache may be cold. Ask for the
                    // pages of every later lookup now, level by level, so that their reads
                    // overlap instead of queueing one after another.
                    faulted = true;
                    slow_lookups += 1;
                    if slow_lookups == 1 {
                        prefetch_lookups(version, band_keys, band + 1);
                    }
                }
                last = now;
                gathered = candidates.len();
            }
        }
        let cold = slow_lookups >= 2;
        stats.segments = version.segments.len();
        let candidates = distinct_sorted(candidates);
        stats.candidates = candidates.len();
        if cold {
            // Verification will read these candidates' signatures and (for matches) doc-table
            // entries: start those reads together, each candidate once.
            version.prefetch_documents(&candidates, record_bytes);
        }
        let (k, bits) = (self.params.sketch.num_perm, self.params.bits);
        // With exact re-rank, candidates within the margin below the threshold are kept for
        // their exact Jaccard to decide.
        let window = RerankWindow::new(threshold, k, bits);
        let gate = match exact {
            Some(_) => window.gate,
            None => threshold,
        };
        let verify = Verifier {
            state,
            packed,
            record_bytes,
            k,
            bits,
            // Candidates that cannot reach the gate are dropped as soon as that shows.
            min_equal: bbit::min_matches_for(gate, k, bits),
            threshold: gate,
            keys_now: !cold,
        };
        // A query with thousands of candidates is spread over every core; small ones stay on
        // the calling thread (a batch already keeps the cores busy with whole queries).
        let (verified, matched) = if candidates.len() >= PARALLEL_CANDIDATES {
            candidates
                .par_chunks(PARALLEL_CHUNK)
                .map(|chunk| verify.run(chunk))
                .try_reduce(
                    || (0, Vec::new()),
                    |(na, mut a), (nb, b)| {
                        a.extend(b);
                        Ok((na + nb, a))
                    },
                )?
        } else {
            verify.run(&candidates)?
        };
        stats.verified = verified;
        let matched: Vec<Decided<'s>> = match exact {
            Some(query_set) => {
                stats.exact = true;
                let sure = window.sure;
                stats.reranked = matched.iter().filter(|&&(_, e, _)| e < sure).count();
                let rerank = |chunk: &[Found<'s>]| -> Result<Vec<Decided<'s>>> {
                    let mut out = Vec::new();
                    for &(docno, estimate, key) in chunk {
                        if estimate >= sure {
                            out.push((docno, estimate, estimate, false, key));
                        } else if let Some(j) = exact_at_least(state, docno, query_set, threshold)?
                        {
                            out.push((docno, j, estimate, true, key));
                        }
                    }
                    Ok(out)
                };
                if let Some(chunk) = rerank_chunk(matched.len(), stats.reranked) {
                    matched
                        .par_chunks(chunk)
                        .map(rerank)
                        .collect::<Result<Vec<_>>>()?
                        .concat()
                } else {
                    rerank(&matched)?
                }
            }
            None => matched
                .into_iter()
                .map(|(d, e, key)| (d, e, e, false, key))
                .collect(),
        };
        if cold && matched.len() > 1 {
            let mut docnos: Vec<u64> = matched.iter().map(|&(docno, ..)| docno).collect();
            docnos.sort_unstable();
            version.prefetch_keys(&docnos);
        }
        // Keys are resolved (borrowed, not copied), the matches ranked, and only those kept
        // copied out: ranking borrowed 40-byte rows is cheaper than ranking owned matches,
        // and a `limit` then copies only what it keeps.
        let resolve = |&(docno, jaccard, estimate, exact, key): &Decided<'s>| {
            let key = match key {
                Some(key) => Some(key),
                None => state.key_of(docno)?,
            };
            Ok(key.map(|key| Ranked {
                jaccard,
                key,
                key_head: key_head(key),
                estimate,
                exact,
            }))
        };
        let mut ranked: Vec<Ranked<'s>> = if matched.len() >= PARALLEL_MATCHES {
            matched
                .par_chunks(PARALLEL_CHUNK)
                .map(|chunk| {
                    chunk
                        .iter()
                        .filter_map(|m| resolve(m).transpose())
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?
                .concat()
        } else {
            matched
                .iter()
                .filter_map(|m| resolve(m).transpose())
                .collect::<Result<_>>()?
        };
        rank(&mut ranked);
        if let Some(limit) = limit {
            ranked.truncate(limit);
        }
        let to_match = |r: &Ranked<'_>| Match {
            key: r.key.to_vec(),
            jaccard: r.jaccard,
            estimate: r.estimate,
            distance: None,
            cosine: None,
            exact: r.exact,
        };
        let matches: Vec<Match> = if ranked.len() >= PARALLEL_MATCHES {
            ranked
                .par_iter()
                .with_min_len(PARALLEL_CHUNK)
                .map(to_match)
                .collect()
        } else {
            ranked.iter().map(to_match).collect()
        };
        scratch::give_back(candidates);
        Ok(QueryResult { matches, stats })
    }
}

/// A match with its key, before the key is copied out.
#[derive(Clone, Copy, Debug)]
struct Ranked<'a> {
    jaccard: f64,
    key: &'a [u8],
    /// [`key_head`] of `key`.
    key_head: u128,
    estimate: f64,
    exact: bool,
}

/// The first 16 bytes of `key` as a big-endian integer (zero-padded): two keys whose heads
/// differ are ordered as their heads are, so ranking compares whole keys only on equal heads
/// (a key that is a prefix of another pads with zeros, so the heads may tie, never invert).
fn key_head(key: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let n = key.len().min(16);
    if let (Some(to), Some(from)) = (head.get_mut(..n), key.get(..n)) {
        to.copy_from_slice(from);
    }
    u128::from_be_bytes(head)
}

/// Orders matches best first, ties by key (live keys are unique, so the order is total). The
/// similarity is sorted on as an integer first; then only runs of equal similarity (estimates
/// are counts of equal slots, so a hot query's matches share a few hundred values) compare
/// keys.
fn rank(ranked: &mut [Ranked<'_>]) {
    ranked.sort_unstable_by_key(|r| std::cmp::Reverse(total_order_key(r.jaccard)));
    for run in ranked.chunk_by_mut(|a, b| a.jaccard.to_bits() == b.jaccard.to_bits()) {
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| a.key_head.cmp(&b.key_head).then_with(|| a.key.cmp(b.key)));
        }
    }
}

/// An integer in the order of [`f64::total_cmp`].
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// A match as verification finds it: docno, estimate, and its key when already read.
type Found<'a> = (u64, f64, Option<&'a [u8]>);

/// Verifies candidates against a query's packed signature.
struct Verifier<'a> {
    state: &'a State,
    packed: &'a [u8],
    record_bytes: usize,
    k: usize,
    bits: u32,
    min_equal: usize,
    threshold: f64,
    /// Read each match's key as it is found (from the row the walk is on) rather than
    /// afterwards (a cold query prefetches the keys of all its matches first instead).
    keys_now: bool,
}

impl<'a> Verifier<'a> {
    /// The number of live candidates compared, and those at or above the threshold with their
    /// estimates, in the order of `candidates`.
    fn run(&self, candidates: &[u64]) -> Result<(usize, Vec<Found<'a>>)> {
        let state = self.state;
        let version = &state.version;
        let mut verified = 0;
        let mut matched = Vec::new();
        // The estimate of a candidate that reaches the threshold.
        let mut compare = |stored: &[u8]| {
            verified += 1;
            match bbit::count_equal_packed_at_least(
                self.packed,
                stored,
                self.k,
                self.bits,
                self.min_equal,
            ) {
                Ok(Some(equal)) => Some(bbit::estimate_from_matches(equal, self.k, self.bits))
                    .filter(|&jaccard| jaccard >= self.threshold),
                _ => None,
            }
        };
        // Committed documents (below the in-memory tables' range) are read segment by segment,
        // each segment's run of candidates walked in step with its rows (candidates are
        // ascending): no search for the segment or the whole doc table per candidate. A
        // version-1 database keeps its signatures in the log: read one by one.
        let memory_base = state.imm.as_ref().map_or(state.mem.base, |imm| imm.base);
        let committed = if version.siglog.is_some() {
            0
        } else {
            candidates.partition_point(|&d| d < memory_base)
        };
        let (in_segments, others) = candidates.split_at(committed);
        // A comparison reads a signature's 64-byte blocks until more fields differ than the
        // threshold allows: the blocks a candidate differing in every field would need, and one
        // more, are prefetched (a candidate shares a band with the query, so it is rarely that
        // different: most need the next block too; not the whole signature, though: at a high
        // threshold most candidates stop after a block or two).
        let max_differing = self.k.saturating_sub(self.min_equal) + 1;
        let slots_per_block = (512 / self.bits.max(1) as usize).max(1);
        let prefetch_bytes = (max_differing.div_ceil(slots_per_block) + 1) * 64;
        let mut rest = in_segments;
        let deletes = state.deletes_committed();
        for seg in &version.segments {
            let seg = &seg.seg;
            let end = rest.partition_point(|&d| d < seg.end_docno());
            let (run, after) = rest.split_at(end);
            rest = after;
            seg.for_each_signature(run, prefetch_bytes, |docno, row, stored| {
                if !(deletes && state.is_deleted(docno))
                    && let Some(jaccard) = compare(stored)
                {
                    let key = if self.keys_now {
                        Some(seg.key_at_row(row)?)
                    } else {
                        None
                    };
                    matched.push((docno, jaccard, key));
                }
                Ok(())
            })?;
        }
        for &docno in others {
            if state.is_deleted(docno) {
                continue;
            }
            if let Some(stored) = state.signature_bytes(docno, self.record_bytes)?
                && let Some(jaccard) = compare(stored)
            {
                matched.push((docno, jaccard, None));
            }
        }
        Ok((verified, matched))
    }
}

/// The buffer a thread gathers its queries' candidates in, kept from one query to the next: a
/// hot query gathers tens of thousands of postings, and a fresh vector for each would grow
/// by copying, and be mapped and unmapped by the allocator, every time.
mod scratch {
    use std::cell::Cell;

    /// Larger buffers are not kept (a rare huge query must not pin its memory).
    const KEEP_MAX: usize = 1 << 20;

    thread_local! {
        static BUFFER: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
    }

    /// The thread's buffer, empty (a fresh one if a query on this thread already holds it:
    /// rayon may run a second query on a thread whose first waits for its parallel part).
    pub(super) fn take() -> Vec<u64> {
        BUFFER.with(Cell::take)
    }

    /// Returns the buffer for the thread's next query.
    pub(super) fn give_back(mut buffer: Vec<u64>) {
        if buffer.capacity() <= KEEP_MAX {
            buffer.clear();
            BUFFER.with(|b| b.set(buffer));
        }
    }
}

/// The distinct docnos of `gathered` (one entry per band bucket hit), ascending. Many entries
/// over a dense range (a hot query: thousands of candidates, each in many bands) are
/// de-duplicated through a bitmap of the range, in linear time; others are sorted.
fn distinct_sorted(mut gathered: Vec<u64>) -> Vec<u64> {
    const BITMAP_MIN_ENTRIES: usize = 128;
    let (Some(&lo), Some(&hi)) = (gathered.iter().min(), gathered.iter().max()) else {
        return gathered;
    };
    // One 64-bit word per 64 docnos of the range: worth it while the words to clear and scan
    // are not many more than the entries.
    let words = ((hi - lo) / 64 + 1) as usize;
    if gathered.len() < BITMAP_MIN_ENTRIES || words > 2 * gathered.len() {
        gathered.sort_unstable();
        gathered.dedup();
        return gathered;
    }
    let mut bitmap = vec![0u64; words];
    for &d in &gathered {
        let rel = d - lo;
        if let Some(w) = bitmap.get_mut((rel / 64) as usize) {
            *w |= 1 << (rel % 64);
        }
    }
    gathered.clear();
    for (i, &word) in bitmap.iter().enumerate() {
        let mut w = word;
        while w != 0 {
            gathered.push(lo + i as u64 * 64 + u64::from(w.trailing_zeros()));
            w &= w - 1;
        }
    }
    gathered
}

/// Whether the calling thread has waited for the disk (a major page fault) since it last
/// asked; true where the system does not count them (then timing alone decides).
fn disk_waited() -> bool {
    thread_local! {
        static SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    let Some(now) = crate::storage::thread_major_faults() else {
        return true;
    };
    SEEN.with(|seen| seen.replace(now) < now)
}

/// Prefetches the directory slots, then the entries, of the bucket lookups of `band_keys`
/// from band `from` on.
fn prefetch_lookups(version: &super::version::Version, band_keys: &[u64], from: usize) {
    let lookups = || band_keys.iter().copied().enumerate().skip(from);
    for (band, bk) in lookups() {
        for seg in &version.segments {
            seg.seg.prefetch_bucket_directory(band, bk);
        }
    }
    for (band, bk) in lookups() {
        for seg in &version.segments {
            seg.seg.prefetch_bucket_entries(band, bk);
        }
    }
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
