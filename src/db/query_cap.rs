//! The bucket cap on a query's side: a band's bucket gathered from every segment and the
//! in-memory tables holds at most `bucket_cap` live documents, chosen by the rule segments
//! and `dedup` use (the keys that hash lowest, [`cap_rank`]). Each segment already keeps at
//! most the cap of its own documents; their union, and documents still in memory, can exceed
//! it, and are cut here, so that a query sees a bucket as `dedup` does, whatever was flushed
//! or merged when.

use super::state::State;
use crate::Result;
use crate::storage::segment::{cap_rank, keep_lowest_ranked};

/// Cuts `candidates[from..]` (one band's bucket, gathered from every source) to the `cap`
/// live documents whose keys hash lowest, if it holds more; deleted ones are dropped first,
/// as `dedup` drops them. Returns whether it cut.
pub(super) fn cap_band(
    state: &State,
    candidates: &mut Vec<u64>,
    from: usize,
    cap: usize,
) -> Result<bool> {
    let Some(bucket) = candidates.get(from..) else {
        return Ok(false);
    };
    if bucket.len() <= cap {
        return Ok(false);
    }
    let mut ranked: Vec<(u64, u64)> = Vec::with_capacity(bucket.len());
    for &d in bucket {
        if !state.is_deleted(d)
            && let Some(key) = state.key_of(d)?
        {
            ranked.push((cap_rank(key), d));
        }
    }
    let cut = ranked.len() > cap;
    // (The candidates are sorted and de-duplicated later.)
    keep_lowest_ranked(&mut ranked, cap);
    candidates.truncate(from);
    candidates.extend(ranked.into_iter().map(|(_, d)| d));
    Ok(cut)
}
