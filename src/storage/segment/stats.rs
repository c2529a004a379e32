//! Statistics of a segment, for the database's stats and for tuning: where its bytes go
//! ([`SizeBreakdown`]) and how large its buckets are ([`BucketStats`]).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use super::format::{KIND_BAND, KIND_DOC_TABLE, KIND_KEY_BLOB, KIND_KEY_INDEX};
use super::reader::Segment;
use crate::Result;

/// Bytes of a segment file by purpose, from [`Segment::size_breakdown`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeBreakdown {
    /// The whole file.
    pub total: u64,
    /// Document keys, concatenated.
    pub key_bytes: u64,
    /// Per-document docno and key offset.
    pub doc_table: u64,
    /// The hash-sorted key index.
    pub key_index: u64,
    /// All bands' posting tables (directories and entries).
    pub postings: u64,
    /// Hot-bucket records.
    pub hot: u64,
    /// Header, section table and footer.
    pub metadata: u64,
}

/// Bucket sizes below this are counted in an array while a band is scanned.
const SMALL_SIZES: usize = 64;

/// Bucket-size distribution of one band of one segment, from [`Segment::bucket_stats`].
///
/// Hot buckets count with their original size. Distributions of several segments can be added
/// with [`BucketStats::add`] (a bucket split over segments then counts once per segment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketStats {
    /// Number of non-empty buckets (hot buckets count even when all their stored docs are gone).
    pub buckets: u64,
    /// Number of stored postings.
    pub postings: u64,
    /// Number of hot (capped) buckets.
    pub hot: u64,
    /// bucket size → number of buckets of that size.
    pub sizes: BTreeMap<u64, u64>,
}

impl BucketStats {
    /// The largest bucket size, 0 when there are no buckets.
    pub fn max(&self) -> u64 {
        self.sizes.keys().next_back().copied().unwrap_or(0)
    }

    /// The smallest size `s` such that at least a fraction `q` of buckets have size ≤ `s`
    /// (`q` is clamped to [0, 1]); 0 when there are no buckets.
    pub fn quantile(&self, q: f64) -> u64 {
        let q = if q.is_nan() { 1.0 } else { q.clamp(0.0, 1.0) };
        let target = ((q * self.buckets as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (&size, &n) in &self.sizes {
            seen += n;
            if seen >= target {
                return size;
            }
        }
        0
    }

    /// Adds another distribution into this one.
    pub fn add(&mut self, other: &BucketStats) {
        self.buckets += other.buckets;
        self.postings += other.postings;
        self.hot += other.hot;
        for (&size, &n) in &other.sizes {
            *self.sizes.entry(size).or_insert(0) += n;
        }
    }
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// How the file's bytes are spent, by section.
    pub fn size_breakdown(&self) -> SizeBreakdown {
        let mut b = SizeBreakdown {
            total: self.data().len() as u64,
            ..SizeBreakdown::default()
        };
        for &(kind, start, end, _) in &self.layout.sections {
            let n = (end - start) as u64;
            match kind {
                KIND_KEY_BLOB => b.key_bytes = n,
                KIND_DOC_TABLE => b.doc_table = n,
                KIND_KEY_INDEX => b.key_index = n,
                KIND_BAND => b.postings += n,
                _ => b.hot = n,
            }
        }
        b.metadata = b.total - b.key_bytes - b.doc_table - b.key_index - b.postings - b.hot;
        b
    }

    /// The bucket-size distribution of `band`, by a scan of the band (O(postings)).
    pub fn bucket_stats(&self, band: usize) -> Result<BucketStats> {
        let t = *self.band_table(band)?;
        let mut hot = BTreeMap::new();
        for h in self.hot_buckets() {
            let h = h?;
            if h.band as usize == band {
                hot.insert(h.key32, h.original_size);
            }
        }
        let mut stats = BucketStats {
            hot: hot.len() as u64,
            ..BucketStats::default()
        };
        // Most buckets hold a few postings: those are counted in an array, folded into the
        // map at the end (a map insert per bucket cost more than reading its postings).
        let mut small = [0u64; SMALL_SIZES];
        let mut record = |stats: &mut BucketStats, key: u32, size: u64| {
            let size = if hot.is_empty() {
                size
            } else {
                hot.remove(&key).unwrap_or(size)
            };
            stats.buckets += 1;
            match small.get_mut(size as usize) {
                Some(n) => *n += 1,
                None => *stats.sizes.entry(size).or_insert(0) += 1,
            }
        };
        let mut current: Option<(u32, u64)> = None;
        self.for_each_entry(&t, |_, key, _| {
            stats.postings += 1;
            match current {
                Some((k, n)) if k == key => current = Some((k, n + 1)),
                Some((k, n)) => {
                    record(&mut stats, k, n);
                    current = Some((key, 1));
                }
                None => current = Some((key, 1)),
            }
            Ok(())
        })?;
        if let Some((k, n)) = current {
            record(&mut stats, k, n);
        }
        for (size, &n) in (0u64..).zip(&small) {
            if n > 0 {
                *stats.sizes.entry(size).or_insert(0) += n;
            }
        }
        // Hot buckets whose stored documents are all gone.
        for (_, size) in std::mem::take(&mut hot) {
            stats.buckets += 1;
            *stats.sizes.entry(size).or_insert(0) += 1;
        }
        Ok(stats)
    }
}
