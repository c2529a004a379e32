//! Queries: band keys → candidates (the recall stage) → verification against stored
//! signatures (the precision stage); one at a time or as a batch (streams of queries are in
//! `query_stream.rs`).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::Db;
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

/// Candidates whose signature reads are started together before they are verified.
const TOUCH_WINDOW: usize = 32;

/// Distinct candidates from which one query's verification is spread over every core (below,
/// the cost of handing work to other threads, a few microseconds, is not worth it).
const PARALLEL_CANDIDATES: usize = 2048;

/// Matches from which one query resolves its keys on every core.
const PARALLEL_MATCHES: usize = 1024;

/// Candidates (or matches) per parallel task.
const PARALLEL_CHUNK: usize = 512;

/// What a query asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryOptions {
    /// Minimum estimated Jaccard of a match; `None` uses the database's threshold.
    pub threshold: Option<f64>,
    /// Keep only the best `limit` matches of those at or above the threshold; `None` keeps
    /// all.
    pub limit: Option<usize>,
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
    /// Jaccard similarity estimated from the stored b-bit signature.
    pub jaccard: f64,
}

/// Where a query spent its effort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Distinct candidate documents gathered from band buckets.
    pub candidates: usize,
    /// Candidates whose signature was compared (live ones).
    pub verified: usize,
    /// Band buckets hit that were capped by compaction (their lists are truncated).
    pub hot_buckets: usize,
    /// Segments probed.
    pub segments: usize,
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
        let state = self.state.read();
        if let Some(k) = opts.top {
            let floor = opts.threshold.unwrap_or(super::TOP_K_FLOOR);
            let mut result = self.run_top_k(&state, &band_keys, &packed, k, floor)?;
            result.matches.truncate(opts.limit.unwrap_or(usize::MAX));
            return Ok(result);
        }
        self.run_query(&state, &band_keys, &packed, threshold, opts.limit)
    }

    /// Documents similar to `text`.
    pub fn query_text(&self, text: &str, opts: &QueryOptions) -> Result<QueryResult> {
        self.query(&self.sketch_text(text)?, opts)
    }

    /// Many queries, answered on every core.
    pub fn query_batch(&self, sigs: &[Signature], opts: &QueryOptions) -> Result<Vec<QueryResult>> {
        sigs.par_iter().map(|s| self.query(s, opts)).collect()
    }

    fn run_query(
        &self,
        state: &State,
        band_keys: &[u64],
        packed: &[u8],
        threshold: f64,
        limit: Option<usize>,
    ) -> Result<QueryResult> {
        let mut stats = QueryStats::default();
        let mut candidates: Vec<u64> = Vec::new();
        let version = &state.version;
        // Lookups that waited for the disk so far: the first starts prefetching the later
        // lookups; a second confirms a cold page cache (one slow band alone may be this thread
        // losing the core on a busy machine) and the candidates' documents are prefetched too.
        let mut slow_lookups = 0u32;
        let record_bytes = self.params.sig_bytes();
        // A band's lookups (one per segment) take about a microsecond each from the page
        // cache; far longer means they waited for the disk.
        let cold_band = COLD_LOOKUP + Duration::from_micros(2) * version.segments.len() as u32;
        let mut last = Instant::now();
        // Candidates gathered when the clock was last read.
        let mut gathered = 0usize;
        for (band, &bk) in band_keys.iter().enumerate() {
            state.mem.bucket_into(band, bk, &mut candidates);
            if let Some(imm) = &state.imm {
                imm.bucket_into(band, bk, &mut candidates);
            }
            for (i, seg) in version.segments.iter().enumerate() {
                seg.seg.postings_into(band, bk, &mut candidates)?;
                if seg.seg.hot_count() > 0 && seg.seg.hot_bucket(band, bk)?.is_some() {
                    stats.hot_buckets += 1;
                }
                // The first band's lookups are timed one by one, so that a cold query starts
                // prefetching after its first disk wait even with many segments.
                if band == 0 && slow_lookups == 0 && i + 1 < version.segments.len() {
                    let now = Instant::now();
                    let decoding = POSTING_DECODE * (candidates.len() - gathered) as u32;
                    if now.duration_since(last) >= COLD_LOOKUP + decoding {
                        slow_lookups += 1;
                        prefetch_lookups(version, band_keys, 0);
                    }
                    last = now;
                    gathered = candidates.len();
                }
            }
            if slow_lookups < 2 {
                // Then one clock read per band (clock reads are most of a warm query's fixed
                // cost).
                let now = Instant::now();
                let decoding = POSTING_DECODE * (candidates.len() - gathered) as u32;
                if now.duration_since(last) >= cold_band + decoding {
                    // This band waited for the disk: the page cache may be cold. Ask for the
                    // pages of every later lookup now, level by level, so that their reads
                    // overlap instead of queueing one after another.
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
            for &docno in &candidates {
                prefetch_document(version, docno, record_bytes);
            }
        }
        let verify = Verifier {
            state,
            packed,
            record_bytes,
            k: self.params.sketch.num_perm,
            bits: self.params.bits,
            // Candidates that cannot reach the threshold are dropped as soon as that shows.
            min_equal: bbit::min_matches_for(
                threshold,
                self.params.sketch.num_perm,
                self.params.bits,
            ),
            threshold,
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
        if cold && matched.len() > 1 {
            for &(docno, _) in &matched {
                if let Some(seg) = version.segment_of(docno) {
                    seg.seg.prefetch_key(docno);
                }
            }
        }
        let resolve = |&(docno, jaccard): &(u64, f64)| -> Result<Option<Match>> {
            Ok(state.key_of(docno)?.map(|key| Match {
                key: key.to_vec(),
                jaccard,
            }))
        };
        let mut matches: Vec<Match> = if matched.len() >= PARALLEL_MATCHES {
            matched
                .par_chunks(PARALLEL_CHUNK)
                .map(|chunk| {
                    chunk
                        .iter()
                        .filter_map(|m| resolve(m).transpose())
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect()
        } else {
            matched
                .iter()
                .filter_map(|m| resolve(m).transpose())
                .collect::<Result<_>>()?
        };
        // Live keys are unique, so the order is total and an unstable sort gives the same.
        matches.sort_unstable_by(|a, b| {
            b.jaccard
                .total_cmp(&a.jaccard)
                .then_with(|| a.key.cmp(&b.key))
        });
        if let Some(limit) = limit {
            matches.truncate(limit);
        }
        Ok(QueryResult { matches, stats })
    }
}

/// Verifies candidates against a query's packed signature.
struct Verifier<'a> {
    state: &'a State,
    packed: &'a [u8],
    record_bytes: usize,
    k: usize,
    bits: u32,
    min_equal: usize,
    threshold: f64,
}

impl Verifier<'_> {
    /// The number of live candidates compared, and those at or above the threshold with their
    /// estimates, in the order of `candidates`.
    fn run(&self, candidates: &[u64]) -> Result<(usize, Vec<(u64, f64)>)> {
        let state = self.state;
        let mut verified = 0;
        let mut matched = Vec::new();
        let mut stored_of: Vec<(u64, &[u8])> = Vec::with_capacity(TOUCH_WINDOW);
        // Verification waits on memory: each candidate's signature is a cache miss, and the
        // comparison loop (with its early exits) takes them one after another. Finding a
        // window's live signatures (a checked read each) and reading every cache line of them
        // first issues those misses together, so they overlap.
        for window in candidates.chunks(TOUCH_WINDOW) {
            stored_of.clear();
            for &docno in window {
                if state.is_deleted(docno) {
                    continue;
                }
                if let Some(stored) = state.signature_bytes(docno, self.record_bytes)? {
                    stored_of.push((docno, stored));
                }
            }
            if stored_of.len() > 1 {
                let mut touched = 0u8;
                for (_, stored) in &stored_of {
                    // One byte of every cache line the comparison may read.
                    for b in stored.iter().step_by(64) {
                        touched ^= b;
                    }
                }
                std::hint::black_box(touched);
            }
            for &(docno, stored) in &stored_of {
                verified += 1;
                let Ok(Some(equal)) = bbit::count_equal_packed_at_least(
                    self.packed,
                    stored,
                    self.k,
                    self.bits,
                    self.min_equal,
                ) else {
                    continue;
                };
                let jaccard = bbit::estimate_from_matches(equal, self.k, self.bits);
                if jaccard >= self.threshold {
                    matched.push((docno, jaccard));
                }
            }
        }
        Ok((verified, matched))
    }
}

/// The distinct docnos of `gathered` (one entry per band bucket hit), ascending. Many entries
/// over a dense range (a hot query: thousands of candidates, each in many bands) are
/// de-duplicated through a bitmap of the range, in linear time; others are sorted.
fn distinct_sorted(mut gathered: Vec<u64>) -> Vec<u64> {
    const BITMAP_MIN_ENTRIES: usize = 1024;
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

/// Prefetches what verifying candidate `docno` reads: its signature, and the doc-table
/// entries that lead to its key.
fn prefetch_document(version: &super::version::Version, docno: u64, record_bytes: usize) {
    version.prefetch_signature(docno, record_bytes);
    if let Some(seg) = version.segment_of(docno) {
        seg.seg.prefetch_doc_entry(docno);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{IndexParams, Options};

    /// The cold-query prefetch hints run on real file maps (not the simulated filesystem,
    /// where they do nothing): for any band key and any docno, in range or not, they neither
    /// fail nor change an answer.
    #[test]
    fn prefetch_hints_on_mapped_files_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = Db::create(&path, IndexParams::default(), Options::default()).unwrap();
        let texts: Vec<String> = (0..300)
            .map(|i| format!("document {} about {} and {}", i % 37, i, i * 7919 % 101))
            .collect();
        for (i, t) in texts.iter().enumerate() {
            db.insert_text(format!("k{i}"), t).unwrap();
        }
        db.flush().unwrap();
        drop(db);
        let db = Db::open_read_only(&path).unwrap();
        let opts = QueryOptions::default();
        let before: Vec<_> = texts
            .iter()
            .map(|t| db.query_text(t, &opts).unwrap())
            .collect();
        let state = db.state.read();
        let version = &state.version;
        assert!(!version.segments.is_empty());
        let record_bytes = db.params.sig_bytes();
        for t in &texts {
            let sig = db.sketch_text(t).unwrap();
            let keys = db.banding.band_keys(sig.slots()).unwrap();
            for from in [0, 1, keys.len(), keys.len() + 1] {
                prefetch_lookups(version, &keys, from);
            }
            prefetch_lookups(version, &[u64::MAX; 64], 0);
        }
        for docno in (0..400).chain([u64::MAX - 1, u64::MAX]) {
            prefetch_document(version, docno, record_bytes);
            if let Some(seg) = version.segment_of(docno) {
                seg.seg.prefetch_key(docno);
            }
        }
        drop(state);
        let after: Vec<_> = texts
            .iter()
            .map(|t| db.query_text(t, &opts).unwrap())
            .collect();
        assert_eq!(before, after);
        assert!(before.iter().all(|r| !r.matches.is_empty()));
    }

    fn small_db(dir: &std::path::Path) -> (Db, Vec<String>) {
        let db = Db::create(dir.join("db"), IndexParams::default(), Options::default()).unwrap();
        let texts: Vec<String> = (0..200)
            .map(|i| format!("text {} with words {} and {}", i % 23, i, i * 31 % 97))
            .collect();
        for (i, t) in texts.iter().enumerate() {
            db.insert_text(format!("k{i}"), t).unwrap();
        }
        (db, texts)
    }

    /// Streams answer every query exactly as one-by-one queries do, in input order with their
    /// tags, whatever the window (0 is taken as 1).
    #[test]
    fn streams_answer_in_input_order() {
        let dir = tempfile::tempdir().unwrap();
        let (db, texts) = small_db(dir.path());
        let opts = QueryOptions {
            threshold: Some(0.5),
            limit: Some(5),
            top: None,
        };
        let want: Vec<QueryResult> = texts
            .iter()
            .map(|t| db.query_text(t, &opts).unwrap())
            .collect();
        let sigs: Vec<Signature> = texts
            .iter()
            .map(|t| db.hasher().unwrap().sketch_text(t))
            .collect();
        for window in [0, 1, 3, 64, 199, 200, 1000] {
            let got: Vec<(usize, QueryResult)> = db
                .query_text_stream(texts.iter().enumerate(), &opts, window)
                .map(|(i, r)| (i, r.unwrap()))
                .collect();
            assert_eq!(got.len(), texts.len());
            for (n, (i, r)) in got.into_iter().enumerate() {
                assert_eq!((i, &r), (n, &want[n]), "window {window}");
            }
            let got: Vec<QueryResult> = db
                .query_stream(sigs.iter().cloned().map(|s| ((), s)), &opts, window)
                .map(|((), r)| r.unwrap())
                .collect();
            assert_eq!(got, want, "window {window}");
        }
        assert_eq!(
            db.query_text_stream(std::iter::empty::<((), &str)>(), &opts, 8)
                .count(),
            0
        );
    }

    /// A stream reads no further than one window ahead of the answers taken, and a failed
    /// query yields its error in its place without ending the stream.
    #[test]
    fn streams_read_at_most_a_window_ahead() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let (db, texts) = small_db(dir.path());
        let pulled = AtomicUsize::new(0);
        let window = 7;
        let input = texts.iter().enumerate().inspect(|_| {
            pulled.fetch_add(1, Ordering::SeqCst);
        });
        let mut taken = 0;
        for (i, r) in db.query_text_stream(input, &QueryOptions::default(), window) {
            assert_eq!(i, taken);
            assert!(r.is_ok());
            taken += 1;
            // The answered window holds at most `window` not yet taken, and one more window
            // is read ahead.
            let ahead = pulled.load(Ordering::SeqCst) - taken;
            assert!(ahead < 2 * window, "{ahead} queries read ahead");
        }
        assert_eq!(taken, texts.len());
        let wrong = Signature::from_slots(vec![1u64; 3]);
        let good = db.hasher().unwrap().sketch_text(&texts[0]);
        let sigs = [good.clone(), wrong, good];
        let got: Vec<bool> = db
            .query_stream(
                sigs.into_iter().map(|s| ((), s)),
                &QueryOptions::default(),
                2,
            )
            .map(|(_, r)| r.is_ok())
            .collect();
        assert_eq!(got, [true, false, true]);
    }

    /// De-duplication gives the sorted distinct docnos on both paths: the bitmap (many entries
    /// over a dense range) and the sort (few entries, or a sparse range).
    #[test]
    fn distinct_candidates_are_sorted_and_unique() {
        let mut state = 7u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for (entries, range, base) in [
            (0, 1, 0),
            (5, 10, 0),
            (5000, 3000, 0),
            (5000, 3000, u64::MAX - 4000),
            (3000, 1 << 40, 17),
            (1024, 64, 1 << 20),
        ] {
            let gathered: Vec<u64> = (0..entries).map(|_| base + next(range)).collect();
            let mut want = gathered.clone();
            want.sort_unstable();
            want.dedup();
            assert_eq!(distinct_sorted(gathered), want, "{entries} in {range}");
        }
    }

    /// A query with thousands of candidates (a template shared by every document), verified
    /// on every core, finds exactly the documents that share a band with it and whose stored
    /// signature reaches the threshold, and counts each candidate once.
    #[test]
    fn hot_queries_find_exactly_the_similar_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let params =
            IndexParams::for_threshold(crate::sketch::SketchParams::default(), 32, 0.5).unwrap();
        let db = Db::create(dir.path().join("db"), params, Options::default()).unwrap();
        let template: String = (0..60)
            .map(|i| format!("shared line {i} of the page. "))
            .collect();
        let texts: Vec<String> = (0..6000)
            .map(|i| {
                let own: String = (0..(i % 40) * 6).map(|j| format!("w{i}x{j} ")).collect();
                format!("{template} page {i}: {own}")
            })
            .collect();
        // Half in a segment, half in memory; a few deleted.
        let keyed: Vec<(String, &String)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("k{i:05}"), t))
            .collect();
        for (n, half) in keyed.chunks(keyed.len() / 2).enumerate() {
            let mut batch = crate::db::WriteBatch::new();
            for (key, t) in half {
                batch.insert_text(key, t.as_str());
            }
            db.write(&batch).unwrap();
            if n == 0 {
                db.flush().unwrap();
            }
        }
        let deleted = |i: usize| i % 97 == 3;
        let mut batch = crate::db::WriteBatch::new();
        for i in (0..texts.len()).filter(|&i| deleted(i)) {
            batch.delete(format!("k{i:05}"));
        }
        db.write(&batch).unwrap();
        let hasher = db.hasher().unwrap();
        let (k, bits) = (db.params.sketch.num_perm, db.params.bits);
        let q = hasher.sketch_text(&texts[40]);
        let q_keys = db.banding.band_keys(q.slots()).unwrap();
        let q_packed = bbit::pack(q.slots(), bits).unwrap();
        let mut sharing = 0;
        let mut want: Vec<(String, f64)> = Vec::new();
        let mut sharing_deleted = 0;
        for (i, t) in texts.iter().enumerate() {
            let s = hasher.sketch_text(t);
            let keys = db.banding.band_keys(s.slots()).unwrap();
            if !keys.iter().zip(&q_keys).any(|(a, b)| a == b) {
                continue;
            }
            if deleted(i) {
                sharing_deleted += 1;
                continue;
            }
            sharing += 1;
            let packed = bbit::pack(s.slots(), bits).unwrap();
            let j = bbit::estimate_packed(&q_packed, &packed, k, bits).unwrap();
            if j >= 0.5 {
                want.push((format!("k{i:05}"), j));
            }
        }
        let got = db.query(&q, &QueryOptions::default()).unwrap();
        assert!(
            got.stats.candidates >= PARALLEL_CANDIDATES,
            "{:?}",
            got.stats
        );
        // Deleted documents are candidates (their postings remain), not verified.
        assert!(sharing_deleted > 0);
        assert_eq!(got.stats.candidates, sharing + sharing_deleted);
        assert_eq!(got.stats.verified, sharing);
        let mut got: Vec<(String, f64)> = got
            .matches
            .into_iter()
            .map(|m| (String::from_utf8(m.key).unwrap(), m.jaccard))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert!(
            want.len() > 100 && want.len() < sharing,
            "{} of {sharing}",
            want.len()
        );
        assert_eq!(got, want);
    }

    /// A text without shingles is similar to nothing, not even to stored empty texts.
    #[test]
    fn empty_texts_match_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (db, texts) = small_db(dir.path());
        db.insert_text("empty-1", "").unwrap();
        db.insert_text("empty-2", " \t\n ").unwrap();
        let opts = QueryOptions {
            threshold: Some(0.0),
            limit: None,
            top: None,
        };
        for q in ["", "   ", "\n"] {
            assert_eq!(db.query_text(q, &opts).unwrap(), QueryResult::default());
        }
        let stored = db.query_text(&texts[1], &opts).unwrap();
        assert!(stored.matches.iter().all(|m| !m.key.starts_with(b"empty")));
        assert!(!stored.matches.is_empty());
    }
}
