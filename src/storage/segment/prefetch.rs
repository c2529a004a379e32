//! Prefetch hints for cold lookups, for segments whose bytes can be prefetched (a mapped
//! file): each asks for the pages the next step of a lookup will read.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::band_filter;
use super::format::band_key32;
use super::prefix::Table;
use super::reader::Segment;
use crate::storage::vfs::{Prefetch, PrefetchBatch};

/// The directory slot a lookup of `key32` in table `t` reads first.
fn directory_slot(t: &Table, key32: u32) -> u64 {
    if t.prefix_bits == 0 {
        0
    } else {
        u64::from(key32 >> t.suffix_bits())
    }
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// The byte range of the filter block a lookup of `key32` in `band` reads first, in a
    /// segment with filters.
    fn filter_block(&self, band: usize, key32: u32) -> Option<(usize, usize)> {
        let f = self.layout.filters.get(band)?;
        let (from, to) = band_filter::block_range(&f.params?, key32);
        Some((f.start + from, to - from))
    }

    /// Whether `band`'s filter says the band lacks `key32`, its bytes not checked: for hints
    /// only (a damaged filter costs a hint, never an answer).
    fn filter_rules_out(&self, band: usize, key32: u32) -> bool {
        self.layout.filters.get(band).is_some_and(|f| {
            let bytes = self.data().get(f.start..f.end).unwrap_or_default();
            f.params
                .is_some_and(|params| !band_filter::may_contain(bytes, &params, key32))
        })
    }
}

/// Prefetching for cold lookups: a lookup reads a directory slot, then the entries it points
/// to, then (for matches) a doc-table entry and a key, each read depending on the one before.
/// On a cold page cache each is a disk read; asking for all of one level's pages of a query at
/// once lets the disk serve them together. These calls only hint (nothing is read or checked).
impl<B: AsRef<[u8]> + Prefetch> Segment<B> {
    /// Prefetches the directory of every band (about 0.26 B per posting), and every band's
    /// filter in a segment with filters (about 1.24 B per posting): a lookup reads its
    /// filter block before its directory slot.
    pub fn prefetch_directories_and_filters(&self) {
        for t in &self.layout.bands {
            self.bytes.prefetch(t.offset, (t.slots() as usize + 1) * 4);
        }
        for f in &self.layout.filters {
            self.bytes.prefetch(f.start, f.end.saturating_sub(f.start));
        }
    }

    /// Reads the directory slot a lookup of `band_key` in `band` reads first (to time it).
    pub fn touch_bucket_directory(&self, band: usize, band_key: u64) {
        if let Some(t) = self.layout.bands.get(band) {
            let slot = directory_slot(t, band_key32(band_key));
            std::hint::black_box(self.dir(t, slot).ok());
        }
    }

    /// Prefetches the directory slots a lookup of `band_key` in `band` reads first (its
    /// filter block, in a segment with filters).
    pub fn prefetch_bucket_directory(&self, band: usize, band_key: u64) {
        if let Some((at, len)) = self.filter_block(band, band_key32(band_key)) {
            self.bytes.prefetch(at, len);
            return;
        }
        self.prefetch_directory_slot(band, band_key);
    }

    /// Prefetches the directory slots a lookup of `band_key` in `band` reads after its
    /// filter block.
    pub fn prefetch_directory_slot(&self, band: usize, band_key: u64) {
        if let Some(t) = self.layout.bands.get(band) {
            let slot = directory_slot(t, band_key32(band_key));
            self.bytes.prefetch(t.offset + slot as usize * 4, 8);
        }
    }

    /// Prefetches the entries the bucket's directory slots point to (reading the directory,
    /// which [`Segment::prefetch_bucket_directory`] should have asked for first); none for a
    /// bucket the band's filter rules out.
    pub fn prefetch_bucket_entries(&self, band: usize, band_key: u64) {
        let Some(t) = self.layout.bands.get(band) else {
            return;
        };
        let key32 = band_key32(band_key);
        if self.filter_rules_out(band, key32) {
            return;
        }
        let slot = directory_slot(t, key32);
        if let Some((start, end)) = self.dir_range_unchecked(t, slot)
            && start < end
            && end <= t.count
        {
            let (from, to) = (self.entry_offset(t, start), self.entry_offset(t, end - 1));
            self.bytes.prefetch(from, to - from + 16);
        }
    }

    /// The doc-table entries [`Segment::key_of`] searches for `docno`, as a byte range.
    fn doc_entry_range(&self, docno: u64) -> Option<(usize, usize)> {
        let l = &self.layout;
        if docno < l.base || docno >= self.end_docno() {
            return None;
        }
        let rel = docno - l.base;
        let holes = l.span.saturating_sub(l.doc_count);
        let lo = rel.saturating_sub(holes).saturating_sub(1);
        let hi = (rel + 1).min(l.doc_count).max(lo);
        let w = u64::from(l.docno_bits + l.end_bits);
        let byte = |i: u64| l.docs.saturating_add((i.saturating_mul(w) / 8) as usize);
        let (from, to) = (byte(lo), byte(hi));
        Some((from, to - from + 16))
    }

    /// The rows the stored signature of `docno` may be in, as a byte range: exact when the
    /// docno range has no holes, else the few rows it may be in (none past 8 holes).
    fn signature_range(&self, docno: u64) -> Option<(usize, usize)> {
        let l = &self.layout;
        if l.record_bytes == 0 || docno < l.base || docno >= self.end_docno() {
            return None;
        }
        let rel = docno - l.base;
        let holes = l.span.saturating_sub(l.doc_count);
        let (lo, hi) = (rel.saturating_sub(holes), (rel + 1).min(l.doc_count));
        if holes > 8 || lo >= hi {
            return None;
        }
        let from = l.signatures.saturating_add(lo as usize * l.record_bytes);
        Some((from, (hi - lo) as usize * l.record_bytes))
    }

    /// The key bytes of `docno` (reading its doc-table entry, which
    /// [`Segment::prefetch_doc_entry`] should have asked for first).
    fn key_range(&self, docno: u64) -> Option<(usize, usize)> {
        match self.ordinal_of(docno) {
            Ok(Some(i)) => self.doc_at(i).ok().map(|(_, s, e)| (s, e - s)),
            _ => None,
        }
    }

    /// Prefetches the doc-table entries [`Segment::key_of`] searches for `docno`.
    pub fn prefetch_doc_entry(&self, docno: u64) {
        if let Some((from, len)) = self.doc_entry_range(docno) {
            self.bytes.prefetch(from, len);
        }
    }

    /// Prefetches the key bytes of `docno` (reading its doc-table entry, which
    /// [`Segment::prefetch_doc_entry`] should have asked for first).
    pub fn prefetch_key(&self, docno: u64) {
        if let Some((from, len)) = self.key_range(docno) {
            self.bytes.prefetch(from, len);
        }
    }

    /// Prefetches the stored signature of `docno` (and the doc-table entries that find its
    /// row).
    pub fn prefetch_signature(&self, docno: u64) {
        self.prefetch_doc_entry(docno);
        if let Some((from, len)) = self.signature_range(docno) {
            self.bytes.prefetch(from, len);
        }
    }

    /// Prefetches what verifying each of `docnos` reads (its doc-table entries, and its
    /// signature when `signatures`), as few merged ranges (one call per record cost more
    /// than the reads it started).
    pub fn prefetch_documents(&self, docnos: &[u64], signatures: bool) {
        let mut batch = PrefetchBatch::default();
        for &docno in docnos {
            if let Some((from, len)) = self.doc_entry_range(docno) {
                batch.add(from, len);
            }
            if signatures && let Some((from, len)) = self.signature_range(docno) {
                batch.add(from, len);
            }
        }
        batch.issue(&self.bytes);
    }

    /// Prefetches the keys of `docnos` (reading their doc-table entries, which
    /// [`Segment::prefetch_documents`] should have asked for first), as few merged ranges.
    pub fn prefetch_keys(&self, docnos: &[u64]) {
        let mut batch = PrefetchBatch::default();
        for &docno in docnos {
            if let Some((from, len)) = self.key_range(docno) {
                batch.add(from, len);
            }
        }
        batch.issue(&self.bytes);
    }
}

/// Cache hints for warm lookups: from memory, a lookup still waits on a cache miss for its
/// directory slot, then one or two for its entries, one after another, and a query makes one
/// lookup per band and segment. Asking for every band's directory slot first, and for the next
/// band's entries while this band is looked up, overlaps those misses. The directory hint
/// reads nothing (a prefetch instruction never faults, so it also costs a cold query nothing);
/// the entries hint reads the directory slots, which the lookup would read next anyway.
impl<B: AsRef<[u8]>> Segment<B> {
    /// Asks the CPU for what a lookup of `band_key` in `band` reads first: its filter block
    /// in a segment with filters, else its directory slots.
    pub fn cache_filter_block(&self, band: usize, band_key: u64) {
        match self.filter_block(band, band_key32(band_key)) {
            Some((at, len)) => {
                if let Some(bytes) = self.data().get(at..at.saturating_add(len)) {
                    crate::storage::prefetch_lines(bytes);
                }
            }
            None => self.cache_directory_slot(band, band_key),
        }
    }

    /// Asks the CPU for the directory slots a lookup of `band_key` in `band` reads after its
    /// filter block.
    pub fn cache_directory_slot(&self, band: usize, band_key: u64) {
        if let Some(t) = self.layout.bands.get(band) {
            let slot = directory_slot(t, band_key32(band_key)) as usize;
            let at = t.offset.saturating_add(slot.saturating_mul(4));
            if let Some(bytes) = self.data().get(at..at.saturating_add(8)) {
                crate::storage::prefetch_lines(bytes);
            }
        }
    }

    /// Asks the CPU for the first entries of the bucket of `band_key` in `band` (where the
    /// lookup's search starts), reading its directory slots; the caller has asked the band's
    /// filter ([`Segment::may_hold`]) already.
    pub fn cache_bucket_entries(&self, band: usize, band_key: u64) {
        /// The bytes asked for: a hot bucket's scan is sequential, which the CPU foresees.
        const AHEAD: usize = 128;
        let Some(t) = self.layout.bands.get(band) else {
            return;
        };
        let key32 = band_key32(band_key);
        let slot = directory_slot(t, key32);
        if let Some((start, end)) = self.dir_range_unchecked(t, slot)
            && start < end
            && end <= t.count
        {
            let (from, to) = (self.entry_offset(t, start), self.entry_offset(t, end - 1));
            let to = (to + 16).min(from + AHEAD);
            if let Some(bytes) = self.data().get(from..to) {
                crate::storage::prefetch_lines(bytes);
            }
        }
    }
}
