//! [`Segment`]: a read-only view of one segment file, decoded in place from any `AsRef<[u8]>`
//! (an mmap, a `Vec<u8>`). The range and counts, documents by docno or by key, a bucket's
//! postings and the hot buckets. Opening ([`super::open`]), verification, statistics and
//! prefetch hints live in their own files as further `impl` blocks of the same type.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use zerocopy::FromBytes;

use super::band_filter;
use super::bits::read_bits;
use super::format::{HOT_RECORD_LEN, HotRecord, band_key32, key_hash32};
use super::open::Layout;
use super::prefix::Table;
use crate::storage::shingle_codec::decode_into;
use crate::{Error, Result};

/// Candidates ahead of the one being verified whose signatures are prefetched: enough to cover
/// a memory read's latency with the comparisons in between.
const SIGNATURE_PREFETCH: usize = 8;

/// A bucket that held more documents than the cap when its segment was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HotBucket {
    /// The band.
    pub band: u32,
    /// The stored (top 32) bits of the band key.
    pub key32: u32,
    /// How many documents the bucket had before the cap (see `format/segment.md` for merges).
    pub original_size: u64,
}

/// A decoded view of one segment file. Holds the bytes and O(bands) metadata; postings and keys
/// are read in place.
#[derive(Debug)]
pub struct Segment<B = Vec<u8>> {
    pub(super) bytes: B,
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    /// One bit per 4 KiB block whose checksum matched (versions 2 and 3; see `blocks.rs`).
    pub(super) checked: Box<[std::sync::atomic::AtomicU64]>,
}

/// The error for damage found at byte `offset` of the file at `path`.
pub(super) fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::corruption(path, offset, detail)
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// Checks the bytes that a `width`-bit field `bit` bits after byte `start` lies in.
    #[inline]
    pub(super) fn check_bits(&self, start: usize, bit: u64, width: u32) -> Result<()> {
        let len = ((bit % 8) as u32 + width).div_ceil(8) as usize;
        self.check(start + (bit / 8) as usize, len)
    }

    /// The segment's bytes as a slice.
    pub(super) fn data(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The file offset of `bytes` if it is a slice of this segment (one this segment's
    /// readers returned), so that damage found in it can be reported where it is.
    pub fn offset_of(&self, bytes: &[u8]) -> Option<u64> {
        let base = self.data().as_ptr() as usize;
        let at = (bytes.as_ptr() as usize).checked_sub(base)?;
        (at.checked_add(bytes.len())? <= self.data().len()).then_some(at as u64)
    }

    /// The error for damage found at byte `offset` of this segment.
    pub(super) fn err(&self, offset: usize, detail: impl Into<String>) -> Error {
        corrupt(&self.path, offset as u64, detail)
    }

    /// The underlying bytes.
    pub fn bytes(&self) -> &B {
        &self.bytes
    }

    /// The path used in error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// First docno of the segment's range.
    pub fn base_docno(&self) -> u64 {
        self.layout.base
    }

    /// End (exclusive) of the segment's docno range.
    pub fn end_docno(&self) -> u64 {
        self.layout.base + self.layout.span
    }

    /// Number of documents stored.
    pub fn doc_count(&self) -> u64 {
        self.layout.doc_count
    }

    /// The file's format version (1, 2 or 3).
    pub fn format_version(&self) -> u32 {
        self.layout.version
    }

    /// The database identity and file number a version-3 segment carries (`None` for
    /// versions 1 and 2). [`Segment::open_as`] has checked it against the caller's.
    pub fn identity(&self) -> Option<crate::storage::identity::FileIdentity> {
        self.layout.identity
    }

    /// The footer's metadata checksum, the root of the chain of checksums that covers every
    /// byte of the file (header, section table, block and section checksums): what a
    /// version-3 manifest records to pin the segment's content.
    pub fn meta_crc(&self) -> u32 {
        self.layout.meta_crc
    }

    /// The byte offset of the footer's `meta_crc` field, for an error that names it.
    pub fn meta_crc_offset(&self) -> u64 {
        self.data().len().saturating_sub(8) as u64
    }

    /// Bytes of one stored signature; 0 when the segment stores none (every version-1
    /// segment: their signatures are in the database's signature log).
    pub fn record_bytes(&self) -> usize {
        self.layout.record_bytes
    }

    /// Number of bands.
    pub fn num_bands(&self) -> usize {
        self.layout.num_bands as usize
    }

    /// The bucket cap the segment was written with, if any.
    pub fn bucket_cap(&self) -> Option<u32> {
        Some(self.layout.bucket_cap).filter(|&c| c > 0)
    }

    /// Number of stored postings of `band` (`None` when out of range).
    pub fn band_postings(&self, band: usize) -> Option<u64> {
        self.layout.bands.get(band).map(|t| t.count)
    }

    // --- documents ----------------------------------------------------------------------------

    /// (docno, key range) of the document at ordinal `i`.
    pub(super) fn doc_at(&self, i: u64) -> Result<(u64, usize, usize)> {
        let l = &self.layout;
        let w = u64::from(l.docno_bits + l.end_bits);
        let read = |bit: u64, width: u32| {
            self.check_bits(l.docs, bit, width)?;
            read_bits(self.data(), l.docs, bit, width)
                .ok_or_else(|| self.err(l.docs + (bit / 8) as usize, "doc table out of bounds"))
        };
        let rel = read(i * w, l.docno_bits)?;
        let end = read(i * w + u64::from(l.docno_bits), l.end_bits)?;
        let start = if i == 0 {
            0
        } else {
            read((i - 1) * w + u64::from(l.docno_bits), l.end_bits)?
        };
        let blob_len = (l.blob.1 - l.blob.0) as u64;
        if start > end || end > blob_len || rel >= l.span {
            return Err(self.err(
                l.docs + (i * w / 8) as usize,
                format!("doc {i}: key {start}..{end} or docno offset {rel} out of range"),
            ));
        }
        Ok((
            l.base + rel,
            l.blob.0 + start as usize,
            l.blob.0 + end as usize,
        ))
    }

    /// The docno of the document at ordinal `i` (its doc-table entry's first field only: the
    /// search for a docno's row reads nothing else).
    pub(super) fn docno_at(&self, i: u64) -> Result<u64> {
        let l = &self.layout;
        let bit = i * u64::from(l.docno_bits + l.end_bits);
        self.check_bits(l.docs, bit, l.docno_bits)?;
        let rel = read_bits(self.data(), l.docs, bit, l.docno_bits)
            .ok_or_else(|| self.err(l.docs + (bit / 8) as usize, "doc table out of bounds"))?;
        if rel >= l.span || i >= l.doc_count {
            return Err(self.err(
                l.docs + (bit / 8) as usize,
                format!("doc {i}: docno offset {rel} out of range"),
            ));
        }
        Ok(l.base + rel)
    }

    /// (docno, key) of the document at ordinal `i`.
    pub(super) fn key_at(&self, i: u64) -> Result<(u64, &[u8])> {
        let (docno, s, e) = self.doc_at(i)?;
        self.check(s, e - s)?;
        let key = self
            .data()
            .get(s..e)
            .ok_or_else(|| self.err(s, "key out of bounds"))?;
        Ok((docno, key))
    }

    /// The key of the document at row (ordinal) `row`, as [`Segment::for_each_signature`]
    /// gives it.
    pub fn key_at_row(&self, row: u64) -> Result<&[u8]> {
        Ok(self.key_at(row)?.1)
    }

    /// Ordinal of `docno` in the doc table.
    pub(super) fn ordinal_of(&self, docno: u64) -> Result<Option<u64>> {
        if docno < self.layout.base || docno >= self.end_docno() {
            return Ok(None);
        }
        // Docnos increase with the ordinal and at most `span − doc_count` numbers of the range
        // are absent, so the ordinal of `base + rel` lies in [rel − holes, rel]: with few holes
        // the search touches one or two entries instead of log2(docs) scattered ones.
        let rel = docno - self.layout.base;
        let holes = self.layout.span - self.layout.doc_count;
        let (mut lo, mut hi) = (
            rel.saturating_sub(holes),
            (rel + 1).min(self.layout.doc_count),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let d = self.docno_at(mid)?;
            match d.cmp(&docno) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// The key of `docno`, or `None` when the segment does not hold it. O(log docs).
    pub fn key_of(&self, docno: u64) -> Result<Option<&[u8]>> {
        match self.ordinal_of(docno)? {
            Some(i) => Ok(Some(self.key_at(i)?.1)),
            None => Ok(None),
        }
    }

    /// The docno of the document whose key is `key`; when several documents share it, the
    /// highest docno. O(log docs), no allocation.
    pub fn find_key(&self, key: &[u8]) -> Result<Option<u64>> {
        let t = self.layout.key_index;
        let mut found = None;
        self.for_each_value_of(&t, key_hash32(key), |i, ordinal| {
            if ordinal >= self.layout.doc_count {
                return Err(self.err(self.entry_offset(&t, i), "key index names a missing doc"));
            }
            let (docno, k) = self.key_at(ordinal)?;
            if k == key && found.is_none_or(|f| f < docno) {
                found = Some(docno);
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// The packed signature of the document at ordinal (row) `i`; empty when the segment
    /// stores none.
    pub fn signature_at(&self, i: u64) -> Result<&[u8]> {
        let n = self.layout.record_bytes;
        if i >= self.layout.doc_count {
            return Err(Error::invalid(
                "row",
                format!("{i} is past the {} documents", self.layout.doc_count),
            ));
        }
        let at = self.layout.signatures + (i as usize) * n;
        self.check(at, n)?;
        self.data()
            .get(at..at + n)
            .ok_or_else(|| self.err(at, "signature out of bounds"))
    }

    /// The packed signatures of rows `from..to`, back to back (checked as
    /// [`Segment::signature_at`] checks one).
    pub fn signature_rows(&self, from: u64, to: u64) -> Result<&[u8]> {
        let n = self.layout.record_bytes;
        if from > to || to > self.layout.doc_count {
            return Err(Error::invalid(
                "rows",
                format!(
                    "{from}..{to} is not within the {} documents",
                    self.layout.doc_count
                ),
            ));
        }
        let at = self.layout.signatures + (from as usize) * n;
        let len = ((to - from) as usize) * n;
        self.check(at, len)?;
        self.data()
            .get(at..at + len)
            .ok_or_else(|| self.err(at, "signatures out of bounds"))
    }

    /// The packed signature of `docno`, or `None` when the segment does not hold it (or
    /// stores no signatures).
    pub fn signature_of(&self, docno: u64) -> Result<Option<&[u8]>> {
        if self.layout.record_bytes == 0 {
            return Ok(None);
        }
        match self.ordinal_of(docno)? {
            Some(i) => self.signature_at(i).map(Some),
            None => Ok(None),
        }
    }

    /// True when the segment stores each document's shingle set (a SHINGLES section).
    pub fn stores_sets(&self) -> bool {
        self.layout.sets.is_some()
    }

    /// The coded shingle set ([`crate::storage::shingle_codec`]) of the document at ordinal (row)
    /// `i`, its bytes checked against their block checksums; empty when the segment stores
    /// none.
    pub fn set_at(&self, i: u64) -> Result<&[u8]> {
        let Some(sets) = self.layout.sets else {
            return Ok(&[]);
        };
        if i >= self.layout.doc_count {
            return Err(Error::invalid(
                "row",
                format!("{i} is past the {} documents", self.layout.doc_count),
            ));
        }
        let at = sets.offsets + (i as usize) * 8;
        self.check(at, 16)?;
        let offset = |at: usize| -> Result<usize> {
            let bytes = self
                .data()
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .ok_or_else(|| self.err(at, "shingle set offset out of bounds"))?;
            usize::try_from(u64::from_le_bytes(bytes))
                .map_err(|_| self.err(at, "shingle set offset out of range"))
        };
        let (from, to) = (offset(at)?, offset(at + 8)?);
        // The first set starts the coded bytes and the last one ends them: a table that says
        // otherwise is damage, never a shifted set.
        let last = i + 1 == self.layout.doc_count;
        if (i == 0 && from != 0) || (last && sets.data.checked_add(to) != Some(sets.end)) {
            return Err(self.err(
                if i == 0 { at } else { at + 8 },
                "shingle set offsets do not cover their section",
            ));
        }
        let (from, to) = match (sets.data.checked_add(from), sets.data.checked_add(to)) {
            (Some(f), Some(t)) if f <= t && t <= sets.end => (f, t),
            _ => {
                return Err(self.err(
                    at,
                    format!(
                        "shingle set offsets {from}..{to} are out of order or past the section"
                    ),
                ));
            }
        };
        self.check(from, to - from)?;
        self.data()
            .get(from..to)
            .ok_or_else(|| self.err(from, "shingle set out of bounds"))
    }

    /// The coded shingle set of `docno`, or `None` when the segment does not hold it (or
    /// stores no sets).
    pub fn set_of(&self, docno: u64) -> Result<Option<&[u8]>> {
        if self.layout.sets.is_none() {
            return Ok(None);
        }
        match self.ordinal_of(docno)? {
            Some(i) => self.set_at(i).map(Some),
            None => Ok(None),
        }
    }

    /// [`Segment::set_at`], its coding checked by decoding it into `scratch`: a set whose
    /// bytes match their checksums but do not decode is corruption naming its byte, so that
    /// compaction and export never carry it on under fresh checksums.
    pub fn checked_set_at(&self, i: u64, scratch: &mut Vec<u32>) -> Result<&[u8]> {
        let coded = self.set_at(i)?;
        if let Err(e) = decode_into(coded, scratch) {
            let at = coded.as_ptr() as usize - self.data().as_ptr() as usize;
            return Err(self.err(at + e.offset, format!("the set of ordinal {i}: {e}")));
        }
        Ok(coded)
    }

    /// [`Segment::set_of`] with the coding checked as [`Segment::checked_set_at`] does.
    pub fn checked_set_of(&self, docno: u64, scratch: &mut Vec<u32>) -> Result<Option<&[u8]>> {
        if self.layout.sets.is_none() {
            return Ok(None);
        }
        match self.ordinal_of(docno)? {
            Some(i) => self.checked_set_at(i, scratch).map(Some),
            None => Ok(None),
        }
    }

    /// Calls `f(docno, row, signature)` for each of `docnos` (ascending) that the segment holds, in
    /// that order, reading each signature checked. The rows are found walking forward with the
    /// docnos: a row is where its docno says when the range has no holes, else searched for
    /// among the few rows after the previous one that it may be in (not the whole table).
    /// The first `prefetch_bytes` of the signatures a few docnos ahead are asked of the CPU
    /// early (what a comparison reads before it can stop; see `bbit`).
    pub fn for_each_signature(
        &self,
        docnos: &[u64],
        prefetch_bytes: usize,
        mut f: impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let l = &self.layout;
        let n = l.record_bytes;
        if n == 0 {
            return Ok(());
        }
        let data = self.data();
        let holes = l.span - l.doc_count;
        let mut next_row = 0;
        // Rows missing before the last row found: with them, a docno ahead says where its row
        // most likely is (exactly, unless more rows are missing in between).
        let mut missing = 0;
        // Each signature is a cache miss or several: the reads of the signatures a few
        // candidates ahead are started early, so that they overlap with the comparisons.
        let prefetch = |docno: Option<&u64>, missing: u64| {
            if let Some(rel) = docno.and_then(|d| d.checked_sub(l.base + missing))
                && rel < l.doc_count
            {
                let at = l.signatures + (rel as usize) * n;
                // (A record need not start on a cache line: its last line is asked for too.)
                if let Some(record) = data.get(at..at + n.min(prefetch_bytes + 63)) {
                    crate::storage::prefetch_lines(record);
                }
            }
        };
        for ahead in docnos.iter().take(SIGNATURE_PREFETCH) {
            prefetch(Some(ahead), 0);
        }
        for (j, &docno) in docnos.iter().enumerate() {
            prefetch(docnos.get(j + SIGNATURE_PREFETCH), missing);
            if docno < l.base || docno >= self.end_docno() {
                continue;
            }
            let rel = docno - l.base;
            let row = if holes == 0 {
                rel
            } else {
                match self.row_near(docno, holes, next_row)? {
                    Some(row) => row,
                    None => continue,
                }
            };
            next_row = row + 1;
            missing = rel - row;
            let at = l.signatures + (row as usize) * n;
            self.check(at, n)?;
            let sig = data
                .get(at..at + n)
                .ok_or_else(|| self.err(at, "signature out of bounds"))?;
            f(docno, row, sig)?;
        }
        Ok(())
    }

    /// The row of `docno` (in the range) in a segment whose range has `holes` docnos without
    /// a document, searched for among the rows from `from` that it may be in: no earlier than
    /// its offset in the range less the holes, no later than that offset. `None` when the
    /// segment does not hold it.
    #[inline]
    fn row_near(&self, docno: u64, holes: u64, from: u64) -> Result<Option<u64>> {
        let l = &self.layout;
        let rel = docno - l.base;
        let (mut lo, mut hi) = (
            rel.saturating_sub(holes).max(from),
            (rel + 1).min(l.doc_count),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.docno_at(mid)?.cmp(&docno) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// Every document `(docno, key)` in docno order.
    pub fn docs(&self) -> impl Iterator<Item = Result<(u64, &[u8])>> + '_ {
        (0..self.layout.doc_count).map(|i| self.key_at(i))
    }

    // --- postings -----------------------------------------------------------------------------

    /// Calls `f(key32, docno)` for every posting of `band`, in (key32, docno) order.
    pub fn for_each_posting(
        &self,
        band: usize,
        mut f: impl FnMut(u32, u64) -> Result<()>,
    ) -> Result<()> {
        let t = *self.band_table(band)?;
        let base = self.layout.base;
        self.for_each_entry(&t, |_, key32, rel| f(key32, base + rel))
    }

    /// The prefix table of `band`; an invalid-argument error when out of range.
    pub(super) fn band_table(&self, band: usize) -> Result<&Table> {
        self.layout.bands.get(band).ok_or_else(|| {
            Error::invalid(
                "band",
                format!("{band} is out of range for {} bands", self.layout.num_bands),
            )
        })
    }

    /// The docnos (ascending) of the bucket of `band_key` in `band`. Only the top 32 bits of
    /// `band_key` are compared, so rare false candidates are possible. If the bucket is hot
    /// ([`Segment::hot_bucket`]), only the `cap` documents whose keys hash lowest
    /// ([`cap_rank`](super::cap_rank)) are stored.
    pub fn postings(&self, band: usize, band_key: u64) -> Result<Postings<'_, B>> {
        let t = *self.band_table(band)?;
        let key32 = band_key32(band_key);
        let (lo, hi) = if self.band_may_hold(band, key32)? {
            self.lookup(&t, key32)?
        } else {
            (0, 0)
        };
        Ok(Postings {
            seg: self,
            table: t,
            next: lo,
            end: hi,
        })
    }

    /// Appends the docnos of [`Segment::postings`] to `out`.
    pub fn postings_into(&self, band: usize, band_key: u64, out: &mut Vec<u64>) -> Result<()> {
        let t = *self.band_table(band)?;
        let key32 = band_key32(band_key);
        if !self.band_may_hold(band, key32)? {
            return Ok(());
        }
        let base = self.layout.base;
        self.for_each_value_of(&t, key32, |i, rel| {
            let docno = base
                .checked_add(rel)
                .ok_or_else(|| self.err(self.entry_offset(&t, i), "docno overflows"))?;
            out.push(docno);
            Ok(())
        })
    }

    /// Whether `band` may hold `key32`: false only when the band's filter says it holds no
    /// such key (a segment without filters may hold any). The filter's header (read at open)
    /// and the block read are checked against their block checksums first (a bit test each,
    /// once checked).
    #[inline]
    pub(super) fn band_may_hold(&self, band: usize, key32: u32) -> Result<bool> {
        let Some(f) = self.layout.filters.get(band) else {
            return Ok(true);
        };
        self.check(f.start, band_filter::HEADER_BYTES)?;
        let params = f
            .params
            .ok_or_else(|| self.err(f.start, "band filter header unreadable"))?;
        let (from, to) = band_filter::block_range(&params, key32);
        self.check(f.start + from, to - from)?;
        let bytes = self.data().get(f.start..f.end).unwrap_or_default();
        Ok(band_filter::may_contain(bytes, &params, key32))
    }

    /// Whether `band` may hold `band_key`: false only when the band's filter (its bytes
    /// checked) says the segment holds no such key. A query asks every segment this for every
    /// band before it looks any bucket up, so that the filter reads of one query overlap.
    pub fn may_hold(&self, band: usize, band_key: u64) -> Result<bool> {
        self.band_may_hold(band, band_key32(band_key))
    }

    /// Whether the segment carries a membership filter per band.
    pub fn has_band_filters(&self) -> bool {
        !self.layout.filters.is_empty()
    }

    // --- hot buckets --------------------------------------------------------------------------

    /// The hot record at index `i`.
    pub(super) fn hot_at(&self, i: u64) -> Result<HotBucket> {
        let at = self.layout.hot.0 + (i as usize) * HOT_RECORD_LEN;
        self.check(at, HOT_RECORD_LEN)?;
        let r = self
            .data()
            .get(at..)
            .and_then(|s| HotRecord::ref_from_prefix(s).ok())
            .map(|(r, _)| r)
            .ok_or_else(|| self.err(at, "hot record out of bounds"))?;
        Ok(HotBucket {
            band: r.band.get(),
            key32: r.key32.get(),
            original_size: r.original_size.get(),
        })
    }

    /// Number of hot (capped) buckets, over all bands.
    pub fn hot_count(&self) -> u64 {
        self.layout.hot.1
    }

    /// Every hot bucket, ordered by (band, key32).
    pub fn hot_buckets(&self) -> impl Iterator<Item = Result<HotBucket>> + '_ {
        (0..self.layout.hot.1).map(|i| self.hot_at(i))
    }

    /// The original size of the bucket of `band_key` in `band` if it is hot. O(log hot).
    pub fn hot_bucket(&self, band: usize, band_key: u64) -> Result<Option<u64>> {
        let want = (band as u64, band_key32(band_key));
        if self.layout.hot.1 == 0 || !self.band_may_hold(band, want.1)? {
            return Ok(None);
        }
        let (mut lo, mut hi) = (0, self.layout.hot.1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let h = self.hot_at(mid)?;
            match (u64::from(h.band), h.key32).cmp(&want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(h.original_size)),
            }
        }
        Ok(None)
    }
}

/// Iterator over the docnos of one bucket, from [`Segment::postings`].
#[derive(Debug)]
pub struct Postings<'a, B> {
    seg: &'a Segment<B>,
    table: Table,
    next: u64,
    end: u64,
}

impl<B: AsRef<[u8]>> Iterator for Postings<'_, B> {
    type Item = Result<u64>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let i = self.next;
        self.next += 1;
        Some(self.seg.entry(&self.table, i).and_then(|(_, rel)| {
            self.seg.layout.base.checked_add(rel).ok_or_else(|| {
                self.seg
                    .err(self.seg.entry_offset(&self.table, i), "docno overflows")
            })
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.saturating_sub(self.next) as usize;
        (n, Some(n))
    }
}

impl<B: AsRef<[u8]>> ExactSizeIterator for Postings<'_, B> {}
