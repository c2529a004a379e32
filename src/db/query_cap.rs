//! The bucket cap on a query's side: a band's bucket gathered from every segment and the
//! in-memory tables holds at most `bucket_cap` live documents, chosen by the rule segments
//! and `dedup` use (the keys that hash lowest, [`cap_rank`]). Each segment already keeps at
//! most the cap of its own documents; their union, and documents still in memory, can exceed
//! it, and are cut here, so that a query sees a bucket as `dedup` does, whatever was flushed
//! or merged when.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::state::State;
use crate::Result;
use crate::storage::segment::{Segment, cap_rank, keep_lowest_ranked};
use crate::storage::vfs::Mapped;

/// The cap ranks of a segment's largest buckets, kept from one query to the next: a capped
/// bucket needs the key of each of its documents (a doc-table read and a key read, two cache
/// misses) to rank it, and the hot buckets of a boilerplate-heavy corpus are the ones most
/// queries hit. A segment never changes, so its ranks stay right; a merged or new segment
/// starts with an empty cache.
#[derive(Debug, Default)]
pub(super) struct CapRankCache(Mutex<HashMap<(usize, u64), Ranks>>);

/// The ranks of one bucket's documents, in posting order (`None`: not in the segment).
type Ranks = Arc<[Option<u64>]>;

/// Buckets kept per segment (each up to the bucket cap's 16-byte ranks: ~5 MB at 32 buckets of
/// 10,000), and the smallest bucket worth keeping (smaller in tests, whose caps are small).
const CACHED_BUCKETS: usize = 32;
const CACHED_MIN_LEN: usize = if cfg!(test) { 16 } else { 256 };

impl CapRankCache {
    /// Buckets kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// The [`cap_rank`] of each of `docnos` (the postings of `band_key` in `band` of `seg`, in
    /// the order `postings_into` gives them), `None` where the segment holds no such document.
    fn ranks(
        &self,
        seg: &Segment<Mapped>,
        band: usize,
        band_key: u64,
        docnos: &[u64],
    ) -> Result<Ranks> {
        if let Some(ranks) = self.0.lock().get(&(band, band_key))
            && ranks.len() == docnos.len()
        {
            return Ok(ranks.clone());
        }
        let ranks: Ranks = docnos
            .iter()
            .map(|&d| Ok(seg.key_of(d)?.map(cap_rank)))
            .collect::<Result<_>>()?;
        if docnos.len() >= CACHED_MIN_LEN {
            let mut cache = self.0.lock();
            if cache.len() < CACHED_BUCKETS {
                cache.insert((band, band_key), ranks.clone());
            }
        }
        Ok(ranks)
    }
}

/// The part of a band's gathered bucket that one segment gave.
#[derive(Clone, Copy, Debug)]
pub(super) struct SegmentPart {
    /// The segment's index in the version.
    pub(super) segment: usize,
    /// Where its postings start and end in the gathered candidates.
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Cuts `candidates[from..]` (one band's bucket, gathered from every source) to the `cap`
/// live documents whose keys hash lowest, if it holds more; deleted ones are dropped first,
/// as `dedup` drops them. `from_segments` says which part each segment gave: their ranks may
/// be cached. Returns whether it cut.
pub(super) fn cap_band(
    state: &State,
    candidates: &mut Vec<u64>,
    from: usize,
    cap: usize,
    (band, band_key): (usize, u64),
    from_segments: &[SegmentPart],
) -> Result<bool> {
    let Some(bucket) = candidates.get(from..) else {
        return Ok(false);
    };
    if bucket.len() <= cap {
        return Ok(false);
    }
    let mut ranked: Vec<(u64, u64)> = Vec::with_capacity(bucket.len());
    let memory_end = from_segments
        .first()
        .map_or(candidates.len(), |part| part.start);
    for &d in candidates.get(from..memory_end).unwrap_or_default() {
        if !state.is_deleted(d)
            && let Some(key) = state.key_of(d)?
        {
            ranked.push((cap_rank(key), d));
        }
    }
    for part in from_segments {
        let (Some(seg), Some(docnos)) = (
            state.version.segments.get(part.segment),
            candidates.get(part.start..part.end),
        ) else {
            continue;
        };
        let ranks = seg.cap_ranks.ranks(&seg.seg, band, band_key, docnos)?;
        for (&d, &rank) in docnos.iter().zip(ranks.iter()) {
            if let Some(rank) = rank
                && !state.is_deleted(d)
            {
                ranked.push((rank, d));
            }
        }
    }
    let cut = ranked.len() > cap;
    // (The candidates are sorted and de-duplicated later.)
    keep_lowest_ranked(&mut ranked, cap);
    candidates.truncate(from);
    candidates.extend(ranked.into_iter().map(|(_, d)| d));
    Ok(cut)
}
