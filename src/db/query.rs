//! Queries: band keys → candidates (the recall stage) → verification against stored
//! signatures (the precision stage).

use rayon::prelude::*;

use super::{Db, State};
use crate::sketch::{Signature, bbit};
use crate::{Error, Result};

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
        self.query(&self.hasher.sketch_text(text), opts)
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
        for (band, &bk) in band_keys.iter().enumerate() {
            state.mem.bucket_into(band, bk, &mut candidates);
            if let Some(imm) = &state.imm {
                imm.bucket_into(band, bk, &mut candidates);
            }
            for seg in &version.segments {
                seg.seg.postings_into(band, bk, &mut candidates)?;
                if seg.seg.hot_count() > 0 && seg.seg.hot_bucket(band, bk)?.is_some() {
                    stats.hot_buckets += 1;
                }
            }
        }
        stats.segments = version.segments.len();
        candidates.sort_unstable();
        candidates.dedup();
        stats.candidates = candidates.len();
        let k = self.params.sketch.num_perm;
        let bits = self.params.bits;
        let record_bytes = self.params.sig_bytes();
        let mut matches = Vec::new();
        for docno in candidates {
            if state.is_deleted(docno) {
                continue;
            }
            let Some(stored) = state.signature_bytes(docno, record_bytes) else {
                continue;
            };
            stats.verified += 1;
            let Ok(equal) = bbit::count_equal_packed(packed, stored, k, bits) else {
                continue;
            };
            let jaccard = bbit::estimate_from_matches(equal, k, bits);
            if jaccard >= threshold
                && let Some(key) = state.key_of(docno)?
            {
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
