//! Queries: band keys → candidates (the recall stage) → verification against stored
//! signatures (the precision stage).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::Db;
use super::state::State;
use crate::sketch::{Signature, bbit};
use crate::{Error, Result};

/// A band's bucket lookups that take this long (plus 2 µs per segment) waited for the disk
/// (one lookup from the page cache takes about a microsecond).
const COLD_LOOKUP: Duration = Duration::from_micros(20);

/// Candidates whose signature reads are started together before they are verified.
const TOUCH_WINDOW: usize = 32;

/// What a query asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryOptions {
    /// Minimum estimated Jaccard of a match; `None` uses the database's threshold.
    pub threshold: Option<f64>,
    /// Keep only the best `limit` matches (top-k); `None` keeps all.
    pub limit: Option<usize>,
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
    pub fn query(&self, sig: &Signature, opts: &QueryOptions) -> Result<QueryResult> {
        let threshold = opts.threshold.unwrap_or(self.params.threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(Error::invalid(
                "threshold",
                format!("must be in [0, 1], got {threshold}"),
            ));
        }
        self.check_signature(sig)?;
        let band_keys = self.banding.band_keys(sig.slots())?;
        let packed = bbit::pack(sig.slots(), self.params.bits)?;
        let state = self.state.read();
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
        let mut cold = false;
        let record_bytes = self.params.sig_bytes();
        // A band's lookups (one per segment) take about a microsecond each from the page
        // cache; far longer means they waited for the disk.
        let cold_band = COLD_LOOKUP + Duration::from_micros(2) * version.segments.len() as u32;
        let mut last = Instant::now();
        for (band, &bk) in band_keys.iter().enumerate() {
            let before = candidates.len();
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
                if band == 0 && !cold && i + 1 < version.segments.len() {
                    let now = Instant::now();
                    if now.duration_since(last) >= COLD_LOOKUP {
                        cold = true;
                        prefetch_lookups(version, band_keys, 0);
                    }
                    last = now;
                }
            }
            if !cold {
                // Then one clock read per band (clock reads are most of a warm query's fixed
                // cost).
                let now = Instant::now();
                if now.duration_since(last) >= cold_band {
                    // This band waited for the disk: the page cache is cold. Ask for the
                    // pages of every later lookup now, level by level, so that their reads
                    // overlap instead of queueing one after another.
                    cold = true;
                    prefetch_lookups(version, band_keys, band + 1);
                }
                last = now;
            }
            if cold {
                // Verification will read these candidates' signatures and (for matches)
                // doc-table entries: start those reads while the lookups go on.
                for &docno in candidates.get(before..).unwrap_or_default() {
                    prefetch_document(version, docno, record_bytes);
                }
            }
        }
        stats.segments = version.segments.len();
        candidates.sort_unstable();
        candidates.dedup();
        stats.candidates = candidates.len();
        let k = self.params.sketch.num_perm;
        let bits = self.params.bits;
        // Candidates that cannot reach the threshold are dropped as soon as that shows.
        let min_equal = bbit::min_matches_for(threshold, k, bits);
        let mut matched: Vec<(u64, f64)> = Vec::new();
        // Verification waits on memory: each candidate's signature is a cache miss, and the
        // comparison loop (with its early exits) takes them one after another. Reading the
        // first byte of a window of candidates' signatures first issues those misses
        // together, so they overlap (about 20% more queries/s with ~130 candidates each).
        for window in candidates.chunks(TOUCH_WINDOW) {
            if window.len() > 1 {
                let mut touched = 0u8;
                for &docno in window {
                    if let Some(stored) = state.signature_bytes(docno, record_bytes) {
                        touched ^= stored.first().copied().unwrap_or(0);
                    }
                }
                std::hint::black_box(touched);
            }
            for &docno in window {
                if state.is_deleted(docno) {
                    continue;
                }
                let Some(stored) = state.signature_bytes(docno, record_bytes) else {
                    continue;
                };
                stats.verified += 1;
                let Ok(Some(equal)) =
                    bbit::count_equal_packed_at_least(packed, stored, k, bits, min_equal)
                else {
                    continue;
                };
                let jaccard = bbit::estimate_from_matches(equal, k, bits);
                if jaccard >= threshold {
                    matched.push((docno, jaccard));
                }
            }
        }
        if cold && matched.len() > 1 {
            for &(docno, _) in &matched {
                if let Some(seg) = version.segment_of(docno) {
                    seg.seg.prefetch_key(docno);
                }
            }
        }
        let mut matches = Vec::with_capacity(matched.len());
        for (docno, jaccard) in matched {
            if let Some(key) = state.key_of(docno)? {
                matches.push(Match {
                    key: key.to_vec(),
                    jaccard,
                });
            }
        }
        matches.sort_by(|a, b| {
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
    version.prefetch_siglog_record(docno, record_bytes);
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
}
