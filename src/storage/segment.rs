//! Immutable band-posting segment files: pure encode and decode, no file I/O.
//!
//! A segment holds a batch of documents whose global document numbers ("docnos") lie in one
//! contiguous range `[base, base + span)`. For every document it stores the document key (any
//! bytes) and, per LSH band, the top 32 bits of the band key. `format/segment.md` is the
//! normative byte layout; this module is its only encoder and decoder.
//!
//! * [`SegmentBuilder`] collects documents in docno order and produces the file bytes.
//! * [`Segment`] reads those bytes in place (an mmap, a `Vec<u8>`, anything `AsRef<[u8]>`).
//!   [`Segment::open`] is cheap (O(bands)) and copies nothing; [`Segment::verify`] checks
//!   every checksum and invariant.
//! * [`merge`] k-way merges segments with disjoint docno ranges, dropping dead documents and
//!   re-applying bucket caps, using only what the segments store.
//!
//! Band keys are truncated to their top 32 bits (`key32`). Two different band keys with the same
//! top 32 bits therefore share a bucket: a rare false candidate that the database removes by
//! verifying signatures. Buckets are capped deterministically: a bucket with more than `cap`
//! documents keeps the `cap` lowest docnos and is recorded as hot together with its original
//! size.
//!
//! The decoder never panics on any input: every read is bounds-checked and every failure is an
//! [`Error::Corruption`] naming the byte offset.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::storage::vfs::Prefetch;
use crate::{Error, Result};
use rayon::prelude::*;

/// First 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"MHDBSEG\0";
/// Last 4 bytes of every segment file.
pub const SEGMENT_FOOTER_MAGIC: [u8; 4] = *b"MHSF";
/// The newest (and only) segment format version this build reads and writes.
pub const SEGMENT_FORMAT_VERSION: u32 = 1;

const HEADER_LEN: usize = 64;
const FOOTER_LEN: usize = 32;
const SECTION_ENTRY_LEN: usize = 40;
const HOT_RECORD_LEN: usize = 16;
/// Largest directory prefix a prefix table may use (a 1 GiB directory).
const MAX_PREFIX_BITS: u32 = 28;

const KIND_KEY_BLOB: u16 = 1;
const KIND_DOC_TABLE: u16 = 2;
const KIND_KEY_INDEX: u16 = 3;
const KIND_BAND: u16 = 4;
const KIND_HOT: u16 = 5;

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: U32,
    flags: U32,
    num_bands: U32,
    bucket_cap: U32,
    base_docno: U64,
    span: U64,
    doc_count: U64,
    reserved: [u8; 16],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
struct SectionEntry {
    kind: U16,
    width_a: u8,
    width_b: u8,
    index: U32,
    offset: U64,
    len: U64,
    count: U64,
    crc32: U32,
    reserved: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
struct Footer {
    section_table_offset: U64,
    num_sections: U32,
    reserved: U32,
    file_len: U64,
    meta_crc: U32,
    magic: [u8; 4],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
struct HotRecord {
    band: U32,
    key32: U32,
    original_size: U64,
}

const _: () = assert!(size_of::<Header>() == HEADER_LEN);
const _: () = assert!(size_of::<SectionEntry>() == SECTION_ENTRY_LEN);
const _: () = assert!(size_of::<Footer>() == FOOTER_LEN);
const _: () = assert!(size_of::<HotRecord>() == HOT_RECORD_LEN);

/// The 32 bits of a band key that a segment stores: its top half.
pub fn band_key32(band_key: u64) -> u32 {
    (band_key >> 32) as u32
}

/// The 32-bit hash the key index sorts documents by: the top half of `xxh3_64(key)`.
fn key_hash32(key: &[u8]) -> u32 {
    (xxh3_64(key) >> 32) as u32
}

/// Bits needed to store every value in `0..n` (0 when `n ≤ 1`).
fn bits_below(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Bits needed to store the value `v` itself.
fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Options shared by [`SegmentBuilder::finish`] and [`merge`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentOptions {
    /// Keep at most this many documents (the lowest docnos) per bucket; `None` keeps all.
    pub bucket_cap: Option<u32>,
}

impl SegmentOptions {
    fn cap_field(&self) -> Result<u32> {
        match self.bucket_cap {
            None => Ok(0),
            Some(0) => Err(Error::invalid("bucket_cap", "must be at least 1 when set")),
            Some(c) => Ok(c),
        }
    }
}

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

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// Appends fixed-width little-endian bit fields (LSB first) to a byte vector.
struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl BitWriter {
    fn new(capacity_bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(capacity_bytes),
            acc: 0,
            nbits: 0,
        }
    }

    fn push(&mut self, value: u64, width: u32) {
        debug_assert!(width <= 64 && (width == 64 || value >> width == 0));
        if width == 0 {
            return;
        }
        // Fewer than 64 bits wait in `acc` between calls; whole 64-bit words leave at once.
        self.acc |= u128::from(value & low_mask(width)) << self.nbits;
        self.nbits += width;
        if self.nbits >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.nbits -= 64;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        let tail = self.nbits.div_ceil(8) as usize;
        self.out
            .extend_from_slice(self.acc.to_le_bytes().get(..tail).unwrap_or_default());
        self.out
    }
}

/// The prefix-bit count that makes a prefix table of `n` entries smallest (ties: more bits).
fn choose_prefix_bits(n: u64, value_bits: u32) -> u32 {
    let mut best = (u128::MAX, 0);
    for p in 0..=MAX_PREFIX_BITS {
        let dir_bits = 32 * ((1u128 << p) + 1);
        let entry_bits = u128::from(n) * u128::from(32 - p + value_bits);
        let total = dir_bits + entry_bits;
        if total <= best.0 {
            best = (total, p);
        }
    }
    best.1
}

/// Encodes a prefix table (see `format/segment.md`): `entries` sorted by (key32, value).
fn encode_prefix_table(entries: &[(u32, u64)], value_bits: u32) -> Result<(Vec<u8>, u32)> {
    let n = entries.len() as u64;
    if n > u64::from(u32::MAX) {
        return Err(Error::invalid(
            "segment",
            format!("a table would hold {n} entries, more than 2^32 − 1"),
        ));
    }
    let p = choose_prefix_bits(n, value_bits);
    let s = 32 - p;
    let slots = 1usize << p;
    let mut dir = Vec::with_capacity((slots + 1) * 4);
    let mut i = 0usize;
    for slot in 0..=slots {
        while let Some(&(k, _)) = entries.get(i) {
            let k_slot = if p == 0 { 0 } else { (k >> s) as usize };
            if k_slot < slot {
                i += 1;
            } else {
                break;
            }
        }
        dir.extend_from_slice(&(i as u32).to_le_bytes());
    }
    let width = u64::from(s + value_bits);
    let mut w = BitWriter::new((n * width).div_ceil(8) as usize);
    let smask = low_mask(s);
    if s + value_bits <= 64 {
        for &(k, v) in entries {
            w.push((u64::from(k) & smask) | (v << s), s + value_bits);
        }
    } else {
        for &(k, v) in entries {
            w.push(u64::from(k) & smask, s);
            w.push(v, value_bits);
        }
    }
    dir.extend_from_slice(&w.finish());
    Ok((dir, p))
}

/// Collects documents in docno order and encodes a segment.
///
/// ```
/// use mhdb::storage::segment::{Segment, SegmentBuilder, SegmentOptions};
///
/// let mut b = SegmentBuilder::new(2, 100)?;
/// b.add(100, b"https://a.example/", &[0xAAAA_0000_0000_0001, 7 << 32])?;
/// b.add(102, b"https://b.example/", &[0xBBBB_0000_0000_0000, 7 << 32])?;
/// let bytes = b.finish(&SegmentOptions::default())?;
///
/// let seg = Segment::open(bytes, "seg-1.bands")?;
/// seg.verify()?;
/// assert_eq!(seg.find_key(b"https://b.example/")?, Some(102));
/// let docs = seg.postings(1, 7 << 32)?.collect::<Result<Vec<u64>, _>>()?;
/// assert_eq!(docs, [100, 102]);
/// # Ok::<(), mhdb::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SegmentBuilder {
    num_bands: usize,
    base: u64,
    end: Option<u64>,
    docnos: Vec<u64>,
    key_blob: Vec<u8>,
    key_ends: Vec<u64>,
    /// Doc-major: `key32s[doc * num_bands + band]`.
    key32s: Vec<u32>,
}

impl SegmentBuilder {
    /// A builder for a segment of `num_bands` bands whose docno range starts at `base_docno`.
    pub fn new(num_bands: usize, base_docno: u64) -> Result<Self> {
        if num_bands == 0 || num_bands > u32::MAX as usize - 4 {
            return Err(Error::invalid(
                "num_bands",
                format!("must be in 1..2^32 − 4, got {num_bands}"),
            ));
        }
        Ok(SegmentBuilder {
            num_bands,
            base: base_docno,
            end: None,
            docnos: Vec::new(),
            key_blob: Vec::new(),
            key_ends: Vec::new(),
            key32s: Vec::new(),
        })
    }

    /// Declares the end (exclusive) of the docno range, when it extends past the last document
    /// added (e.g. the last documents were deleted before the flush). By default the range ends
    /// right after the last document.
    pub fn set_end_docno(&mut self, end_docno: u64) -> Result<()> {
        if end_docno < self.base || self.docnos.last().is_some_and(|&d| d >= end_docno) {
            return Err(Error::invalid(
                "end_docno",
                format!(
                    "{end_docno} does not cover the documents added from {}",
                    self.base
                ),
            ));
        }
        self.end = Some(end_docno);
        Ok(())
    }

    /// Makes room for `docs` more documents whose keys total `key_bytes`, so that adding
    /// them does not grow (and copy) the buffers step by step.
    pub fn reserve(&mut self, docs: usize, key_bytes: usize) {
        self.docnos.reserve(docs);
        self.key_ends.reserve(docs);
        self.key_blob.reserve(key_bytes);
        self.key32s.reserve(docs.saturating_mul(self.num_bands));
    }

    /// Number of documents added so far.
    pub fn doc_count(&self) -> usize {
        self.docnos.len()
    }

    /// Adds a document. Docnos must be strictly increasing and at least the base; `band_keys`
    /// holds one full band key per band (only their top 32 bits are stored).
    pub fn add(&mut self, docno: u64, key: &[u8], band_keys: &[u64]) -> Result<()> {
        if docno < self.base || self.docnos.last().is_some_and(|&d| d >= docno) {
            return Err(Error::invalid(
                "docno",
                format!("{docno} is below the base or not above the previous document"),
            ));
        }
        if self.end.is_some_and(|e| docno >= e) {
            return Err(Error::invalid(
                "docno",
                format!("{docno} is past the end docno"),
            ));
        }
        if docno == u64::MAX {
            return Err(Error::invalid("docno", "u64::MAX is not a valid docno"));
        }
        if band_keys.len() != self.num_bands {
            return Err(Error::invalid(
                "band_keys",
                format!("got {} keys for {} bands", band_keys.len(), self.num_bands),
            ));
        }
        if self.docnos.len() >= u32::MAX as usize {
            return Err(Error::invalid("segment", "more than 2^32 − 1 documents"));
        }
        self.docnos.push(docno);
        self.key_blob.extend_from_slice(key);
        self.key_ends.push(self.key_blob.len() as u64);
        self.key32s.extend(band_keys.iter().map(|&k| band_key32(k)));
        Ok(())
    }

    /// Encodes the segment.
    pub fn finish(self, opts: &SegmentOptions) -> Result<Vec<u8>> {
        let cap = opts.cap_field()?;
        let end = match (self.end, self.docnos.last()) {
            (Some(e), _) => e,
            (None, Some(&last)) => last + 1,
            (None, None) => self.base,
        };
        let nb = self.num_bands;
        let docnos = &self.docnos;
        let key32s = &self.key32s;
        let draft = Draft {
            num_bands: nb as u32,
            base: self.base,
            span: end - self.base,
            cap,
            docnos,
            key_blob: &self.key_blob,
            key_ends: &self.key_ends,
            sorted_runs: false,
        };
        draft.encode(|band| {
            let postings = docnos
                .iter()
                .enumerate()
                .map(|(i, &d)| {
                    let k = key32s.get(i * nb + band).copied().unwrap_or_default();
                    (k, d)
                })
                .collect();
            Ok((postings, Vec::new()))
        })
    }
}

/// One band encoded: table bytes, prefix bits, posting count, hot records.
type EncodedBand = (Vec<u8>, u32, u64, Vec<HotRecord>);

/// Sorts one band's postings, applies the cap (keep the `cap` lowest docnos per bucket) and
/// appends the band's hot records to `hot`. `prior_hot` lists `(key32, documents dropped by
/// earlier caps)` for buckets that were hot in merge inputs; such buckets stay hot. Returns
/// `(key32, docno − base)` sorted.
fn apply_cap(
    band: u32,
    mut postings: Vec<(u32, u64)>,
    mut prior_hot: Vec<(u32, u64)>,
    cap: u32,
    base: u64,
    sorted_runs: bool,
    hot: &mut Vec<HotRecord>,
) -> Vec<(u32, u64)> {
    sort_postings(&mut postings, base, sorted_runs);
    prior_hot.sort_unstable();
    // Sum the dropped counts of a bucket that was hot in several inputs.
    let mut prior: Vec<(u32, u64)> = Vec::with_capacity(prior_hot.len());
    for (k, extra) in prior_hot {
        match prior.last_mut() {
            Some(last) if last.0 == k => last.1 = last.1.saturating_add(extra),
            _ => prior.push((k, extra)),
        }
    }
    let mut record = |key32: u32, original_size: u64| {
        hot.push(HotRecord {
            band: U32::new(band),
            key32: U32::new(key32),
            original_size: U64::new(original_size),
        })
    };
    let mut prior = prior.into_iter().peekable();
    let mut kept: Vec<(u32, u64)> = Vec::with_capacity(postings.len());
    let mut i = 0usize;
    while let Some(&(k, _)) = postings.get(i) {
        let mut j = i;
        while postings.get(j).is_some_and(|&(k2, _)| k2 == k) {
            j += 1;
        }
        // Input-hot buckets with no surviving document stay hot.
        while let Some((pk, extra)) = prior.next_if(|&(pk, _)| pk < k) {
            record(pk, extra);
        }
        let extra = prior.next_if(|&(pk, _)| pk == k).map(|(_, e)| e);
        let size = (j - i) as u64;
        let keep = if cap > 0 {
            size.min(u64::from(cap))
        } else {
            size
        };
        let group = postings.get(i..i + keep as usize).unwrap_or_default();
        kept.extend(group.iter().map(|&(k, d)| (k, d - base)));
        if keep < size || extra.is_some() {
            record(k, size.saturating_add(extra.unwrap_or(0)));
        }
        i = j;
    }
    for (pk, extra) in prior {
        record(pk, extra);
    }
    kept
}

/// Sorts `(key32, docno)` postings. When every docno is within 2^32 of `base` (always, unless
/// a segment's docno range is wider than that), each posting packs into one `u64` with the
/// key in the high half, which sorts in the same order at half the memory traffic of the
/// pairs. With `sorted_runs` (a merge: one sorted run per input segment) the stable sort,
/// which finds runs and merges them, is used; on unordered postings the unstable one is
/// faster.
fn sort_postings(postings: &mut [(u32, u64)], base: u64, sorted_runs: bool) {
    let fits = postings.iter().all(|&(_, d)| {
        d.checked_sub(base)
            .is_some_and(|rel| rel <= u64::from(u32::MAX))
    });
    if !fits {
        postings.sort_unstable();
        return;
    }
    let mut packed: Vec<u64> = postings
        .iter()
        .map(|&(k, d)| (u64::from(k) << 32) | (d - base))
        .collect();
    if sorted_runs {
        packed.sort();
    } else {
        packed.sort_unstable();
    }
    for (slot, p) in postings.iter_mut().zip(&packed) {
        *slot = ((p >> 32) as u32, base + (p & u64::from(u32::MAX)));
    }
}

/// Everything [`Draft::encode`] needs besides the per-band postings.
struct Draft<'a> {
    num_bands: u32,
    base: u64,
    span: u64,
    cap: u32,
    docnos: &'a [u64],
    key_blob: &'a [u8],
    key_ends: &'a [u64],
    /// Each band's postings arrive as sorted runs (a merge) rather than unordered (a build).
    sorted_runs: bool,
}

type BandInput = (Vec<(u32, u64)>, Vec<(u32, u64)>);

impl Draft<'_> {
    /// `band_input(band)` returns that band's postings `(key32, docno)` (any order) and the
    /// buckets already hot in the inputs, `(key32, documents dropped by earlier caps)`.
    fn encode(&self, band_input: impl Fn(usize) -> Result<BandInput> + Sync) -> Result<Vec<u8>> {
        let doc_count = self.docnos.len() as u64;
        let docno_bits = bits_below(self.span);
        let mut out = vec![0u8; HEADER_LEN];
        let mut sections: Vec<SectionEntry> = Vec::with_capacity(self.num_bands as usize + 4);
        let mut push = |out: &mut Vec<u8>, kind, a: u32, b: u32, index, count, bytes: &[u8]| {
            sections.push(SectionEntry {
                kind: U16::new(kind),
                width_a: a as u8,
                width_b: b as u8,
                index: U32::new(index),
                offset: U64::new(out.len() as u64),
                len: U64::new(bytes.len() as u64),
                count: U64::new(count),
                crc32: U32::new(crc32fast::hash(bytes)),
                reserved: U32::new(0),
            });
            out.extend_from_slice(bytes);
        };

        // The doc table and key index on one side, the bands (each gathered, sorted, capped
        // and encoded) on the other, on every core.
        let end_bits = bits_for(self.key_blob.len() as u64);
        let index_bits = bits_below(doc_count);
        let (front, encoded) = rayon::join(
            || -> Result<(Vec<u8>, Vec<u8>, u32)> {
                let mut w = BitWriter::new(0);
                for (&d, &e) in self.docnos.iter().zip(self.key_ends) {
                    w.push(d - self.base, docno_bits);
                    w.push(e, end_bits);
                }
                let doc_table = w.finish();
                // (key hash, ordinal) packed into one u64 each (ordinals are below 2^32).
                let mut packed: Vec<u64> = Vec::with_capacity(self.docnos.len());
                let mut start = 0usize;
                for (i, &e) in self.key_ends.iter().enumerate() {
                    let key = self.key_blob.get(start..e as usize).unwrap_or_default();
                    packed.push((u64::from(key_hash32(key)) << 32) | i as u64);
                    start = e as usize;
                }
                packed.sort_unstable();
                let index: Vec<(u32, u64)> = packed
                    .iter()
                    .map(|&p| ((p >> 32) as u32, p & u64::from(u32::MAX)))
                    .collect();
                drop(packed);
                let (bytes, p) = encode_prefix_table(&index, index_bits)?;
                Ok((doc_table, bytes, p))
            },
            || -> Vec<Result<EncodedBand>> {
                (0..self.num_bands as usize)
                    .into_par_iter()
                    .map(|band| {
                        let (postings, prior_hot) = band_input(band)?;
                        let mut band_hot = Vec::new();
                        let kept = apply_cap(
                            band as u32,
                            postings,
                            prior_hot,
                            self.cap,
                            self.base,
                            self.sorted_runs,
                            &mut band_hot,
                        );
                        let count = kept.len() as u64;
                        let (bytes, p) = encode_prefix_table(&kept, docno_bits)?;
                        Ok((bytes, p, count, band_hot))
                    })
                    .collect()
            },
        );
        let (doc_table, index_table, index_prefix) = front?;
        let band_bytes: usize = encoded
            .iter()
            .map(|r| r.as_ref().map_or(0, |(bytes, ..)| bytes.len()))
            .sum();
        out.reserve(
            self.key_blob.len()
                + doc_table.len()
                + index_table.len()
                + band_bytes
                + SECTION_ENTRY_LEN * (self.num_bands as usize + 4)
                + FOOTER_LEN,
        );
        push(
            &mut out,
            KIND_KEY_BLOB,
            0,
            0,
            0,
            self.key_blob.len() as u64,
            self.key_blob,
        );
        push(
            &mut out,
            KIND_DOC_TABLE,
            docno_bits,
            end_bits,
            0,
            doc_count,
            &doc_table,
        );
        push(
            &mut out,
            KIND_KEY_INDEX,
            index_prefix,
            index_bits,
            0,
            doc_count,
            &index_table,
        );
        let mut hot: Vec<HotRecord> = Vec::new();
        for (band, result) in encoded.into_iter().enumerate() {
            let (bytes, p, count, band_hot) = result?;
            hot.extend(band_hot);
            push(
                &mut out,
                KIND_BAND,
                p,
                docno_bits,
                band as u32,
                count,
                &bytes,
            );
        }
        let cap = self.cap;
        // Hot buckets.
        let hot_bytes: Vec<u8> = hot.iter().flat_map(|h| h.as_bytes().to_vec()).collect();
        push(&mut out, KIND_HOT, 0, 0, 0, hot.len() as u64, &hot_bytes);

        // Section table, header, footer.
        let section_table_offset = out.len() as u64;
        for s in &sections {
            out.extend_from_slice(s.as_bytes());
        }
        let header = Header {
            magic: SEGMENT_MAGIC,
            version: U32::new(SEGMENT_FORMAT_VERSION),
            flags: U32::new(0),
            num_bands: U32::new(self.num_bands),
            bucket_cap: U32::new(cap),
            base_docno: U64::new(self.base),
            span: U64::new(self.span),
            doc_count: U64::new(doc_count),
            reserved: [0; 16],
        };
        if let Some(h) = out.get_mut(..HEADER_LEN) {
            h.copy_from_slice(header.as_bytes());
        }
        let mut footer = Footer {
            section_table_offset: U64::new(section_table_offset),
            num_sections: U32::new(sections.len() as u32),
            reserved: U32::new(0),
            file_len: U64::new((out.len() + FOOTER_LEN) as u64),
            meta_crc: U32::new(0),
            magic: SEGMENT_FOOTER_MAGIC,
        };
        let crc = meta_crc(
            header.as_bytes(),
            out.get(section_table_offset as usize..).unwrap_or_default(),
            footer.as_bytes(),
        );
        footer.meta_crc = U32::new(crc);
        out.extend_from_slice(footer.as_bytes());
        Ok(out)
    }
}

/// CRC-32 (IEEE) of header ‖ section table ‖ footer bytes 0..24.
fn meta_crc(header: &[u8], section_table: &[u8], footer: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(section_table);
    h.update(footer.get(..24).unwrap_or_default());
    h.finalize()
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// A bit-packed prefix table inside the file (key index or one band).
#[derive(Clone, Copy, Debug)]
struct Table {
    /// Absolute offset of the directory.
    offset: usize,
    /// Absolute offset of the packed entries.
    entries: usize,
    count: u64,
    prefix_bits: u32,
    value_bits: u32,
}

impl Table {
    fn suffix_bits(&self) -> u32 {
        32 - self.prefix_bits
    }
    fn width(&self) -> u64 {
        u64::from(self.suffix_bits() + self.value_bits)
    }
    fn slots(&self) -> u64 {
        1u64 << self.prefix_bits
    }
}

/// Byte ranges and parameters found by [`Segment::open`]; O(bands) in size.
#[derive(Clone, Debug)]
struct Layout {
    num_bands: u32,
    bucket_cap: u32,
    base: u64,
    span: u64,
    doc_count: u64,
    blob: (usize, usize),
    docs: usize,
    docno_bits: u32,
    end_bits: u32,
    key_index: Table,
    bands: Vec<Table>,
    hot: (usize, u64),
    sections: Vec<(u16, usize, usize, u32)>,
}

/// A decoded view of one segment file. Holds the bytes and O(bands) metadata; postings and keys
/// are read in place.
#[derive(Debug)]
pub struct Segment<B = Vec<u8>> {
    bytes: B,
    path: PathBuf,
    layout: Layout,
}

fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> Error {
    Error::Corruption {
        path: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// Reads `width ≤ 64` bits starting `bit` bits after byte `start`; `None` when out of bounds.
fn read_bits(bytes: &[u8], start: usize, bit: u64, width: u32) -> Option<u64> {
    if width == 0 {
        return Some(0);
    }
    let byte = start.checked_add(usize::try_from(bit / 8).ok()?)?;
    let shift = (bit % 8) as u32;
    // Fast path: a fixed 16-byte load (no variable-length copy) when the bytes are there.
    if let Some(window) = byte
        .checked_add(16)
        .and_then(|end| bytes.get(byte..end))
        .and_then(|w| <[u8; 16]>::try_from(w).ok())
    {
        let v = u128::from_le_bytes(window) >> shift;
        return Some((v as u64) & low_mask(width));
    }
    let nbytes = (shift + width).div_ceil(8) as usize;
    let mut buf = [0u8; 16];
    let src = bytes.get(byte..byte.checked_add(nbytes)?)?;
    buf.get_mut(..nbytes)?.copy_from_slice(src);
    let v = u128::from_le_bytes(buf) >> shift;
    Some((v as u64) & low_mask(width))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// Validates the header, footer, section table and metadata checksum (O(bands) work, no
    /// per-document memory) and returns a view of the segment. `path` only names the file in
    /// errors.
    pub fn open(bytes: B, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let layout = Self::parse(bytes.as_ref(), &path)?;
        Ok(Segment {
            bytes,
            path,
            layout,
        })
    }

    fn parse(data: &[u8], path: &Path) -> Result<Layout> {
        let len = data.len();
        let bad = |offset: usize, detail: String| corrupt(path, offset as u64, detail);
        if len < HEADER_LEN + FOOTER_LEN {
            return Err(bad(
                len,
                format!("file is {len} bytes, shorter than header + footer"),
            ));
        }
        let (header, _) =
            Header::ref_from_prefix(data).map_err(|_| bad(0, "cannot read header".into()))?;
        if header.magic != SEGMENT_MAGIC {
            return Err(bad(0, "bad magic: not an mhdb segment".into()));
        }
        let version = header.version.get();
        if version != SEGMENT_FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: SEGMENT_FORMAT_VERSION,
            });
        }
        let footer_at = len - FOOTER_LEN;
        let footer = data
            .get(footer_at..)
            .and_then(|f| Footer::ref_from_bytes(f).ok())
            .ok_or_else(|| bad(footer_at, "cannot read footer".into()))?;
        if footer.magic != SEGMENT_FOOTER_MAGIC {
            return Err(bad(
                len - 4,
                "bad footer magic (truncated or torn file?)".into(),
            ));
        }
        if footer.file_len.get() != len as u64 {
            return Err(bad(
                footer_at + 16,
                format!(
                    "footer records {} bytes, file has {len}",
                    footer.file_len.get()
                ),
            ));
        }
        let nsec = footer.num_sections.get() as usize;
        let table_at = footer.section_table_offset.get();
        let table_len = nsec
            .checked_mul(SECTION_ENTRY_LEN)
            .ok_or_else(|| bad(footer_at + 8, "section count overflows".into()))?;
        if usize::try_from(table_at)
            .ok()
            .and_then(|t| t.checked_add(table_len))
            != Some(footer_at)
            || table_at < HEADER_LEN as u64
        {
            return Err(bad(
                footer_at,
                format!(
                    "section table at {table_at} with {nsec} sections does not end at the footer"
                ),
            ));
        }
        let table_at = table_at as usize;
        let table = data.get(table_at..footer_at).unwrap_or_default();
        let header_bytes = data.get(..HEADER_LEN).unwrap_or_default();
        let footer_bytes = data.get(footer_at..).unwrap_or_default();
        let crc = meta_crc(header_bytes, table, footer_bytes);
        if crc != footer.meta_crc.get() {
            return Err(bad(
                footer_at + 24,
                "metadata checksum mismatch (header, section table or footer damaged)".into(),
            ));
        }

        // The metadata is intact as written; still check it is self-consistent, so that a
        // buggy or hostile writer cannot make the reader index out of bounds.
        if header.flags.get() != 0 || header.reserved != [0; 16] || footer.reserved.get() != 0 {
            return Err(bad(12, "unknown flags or non-zero reserved bytes".into()));
        }
        let num_bands = header.num_bands.get();
        if num_bands == 0 || (num_bands as usize).checked_add(4) != Some(nsec) {
            return Err(bad(16, format!("{num_bands} bands but {nsec} sections")));
        }
        let base = header.base_docno.get();
        let span = header.span.get();
        let doc_count = header.doc_count.get();
        if base.checked_add(span).is_none() || doc_count > span || doc_count > u64::from(u32::MAX) {
            return Err(bad(
                24,
                format!("bad range: base {base} span {span} docs {doc_count}"),
            ));
        }
        let docno_bits = bits_below(span);

        let mut sections = Vec::with_capacity(nsec);
        let mut expect_at = HEADER_LEN;
        let mut blob = (0, 0);
        let mut docs = 0;
        let mut end_bits = 0;
        let mut key_index = None;
        let mut bands = Vec::with_capacity(num_bands as usize);
        let mut hot = (0, 0);
        for i in 0..nsec {
            let at = table_at + i * SECTION_ENTRY_LEN;
            let e = data
                .get(at..)
                .and_then(|s| SectionEntry::ref_from_prefix(s).ok())
                .map(|(e, _)| e)
                .ok_or_else(|| bad(at, "cannot read section entry".into()))?;
            let (kind, a, b) = (e.kind.get(), u32::from(e.width_a), u32::from(e.width_b));
            let (off, slen, count) = (e.offset.get(), e.len.get(), e.count.get());
            let want_kind = match i {
                0 => KIND_KEY_BLOB,
                1 => KIND_DOC_TABLE,
                2 => KIND_KEY_INDEX,
                _ if i + 1 == nsec => KIND_HOT,
                _ => KIND_BAND,
            };
            let want_index = if want_kind == KIND_BAND {
                (i - 3) as u32
            } else {
                0
            };
            if kind != want_kind || e.index.get() != want_index || e.reserved.get() != 0 {
                return Err(bad(
                    at,
                    format!("section {i}: unexpected kind {kind} or index"),
                ));
            }
            if off != expect_at as u64 {
                return Err(bad(
                    at + 8,
                    format!("section {i} at {off}, expected {expect_at}"),
                ));
            }
            let end = usize::try_from(slen)
                .ok()
                .and_then(|l| expect_at.checked_add(l))
                .filter(|&end| end <= table_at)
                .ok_or_else(|| bad(at + 16, format!("section {i} length {slen} out of range")))?;
            let table_of = |prefix_bits: u32, value_bits: u32| -> Option<Table> {
                if prefix_bits > MAX_PREFIX_BITS || value_bits > 64 || count > u64::from(u32::MAX) {
                    return None;
                }
                let t = Table {
                    offset: expect_at,
                    entries: expect_at + ((1usize << prefix_bits) + 1) * 4,
                    count,
                    prefix_bits,
                    value_bits,
                };
                let need = ((1u64 << prefix_bits) + 1) * 4 + (count * t.width()).div_ceil(8);
                (need == slen).then_some(t)
            };
            let ok = match kind {
                KIND_KEY_BLOB => {
                    blob = (expect_at, end);
                    a == 0 && b == 0 && count == slen
                }
                KIND_DOC_TABLE => {
                    docs = expect_at;
                    end_bits = b;
                    a == docno_bits
                        && b <= 64
                        && b == bits_for(blob.1 as u64 - blob.0 as u64)
                        && count == doc_count
                        && (count * u64::from(a + b)).div_ceil(8) == slen
                }
                KIND_KEY_INDEX => {
                    key_index =
                        table_of(a, b).filter(|_| b == bits_below(doc_count) && count == doc_count);
                    key_index.is_some()
                }
                KIND_BAND => match table_of(a, b).filter(|_| b == docno_bits) {
                    Some(t) => {
                        bands.push(t);
                        true
                    }
                    None => false,
                },
                _ => {
                    hot = (expect_at, count);
                    a == 0 && b == 0 && count.checked_mul(HOT_RECORD_LEN as u64) == Some(slen)
                }
            };
            if !ok {
                return Err(bad(
                    at,
                    format!("section {i} (kind {kind}) has inconsistent sizes"),
                ));
            }
            sections.push((kind, expect_at, end, e.crc32.get()));
            expect_at = end;
        }
        if expect_at != table_at {
            return Err(bad(
                expect_at,
                "bytes between the last section and the table".into(),
            ));
        }
        let key_index = key_index.ok_or_else(|| bad(table_at, "no key index".into()))?;
        Ok(Layout {
            num_bands,
            bucket_cap: header.bucket_cap.get(),
            base,
            span,
            doc_count,
            blob,
            docs,
            docno_bits,
            end_bits,
            key_index,
            bands,
            hot,
            sections,
        })
    }

    fn data(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    fn err(&self, offset: usize, detail: impl Into<String>) -> Error {
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

    /// Number of bands.
    pub fn num_bands(&self) -> usize {
        self.layout.num_bands as usize
    }

    /// The bucket cap the segment was written with, if any.
    pub fn bucket_cap(&self) -> Option<u32> {
        Some(self.layout.bucket_cap).filter(|&c| c > 0)
    }

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

    /// Number of stored postings of `band` (`None` when out of range).
    pub fn band_postings(&self, band: usize) -> Option<u64> {
        self.layout.bands.get(band).map(|t| t.count)
    }

    // --- prefix tables ------------------------------------------------------------------------

    fn dir(&self, t: &Table, slot: u64) -> Result<u64> {
        let at = t.offset + (slot as usize) * 4;
        read_u32(self.data(), at)
            .map(u64::from)
            .ok_or_else(|| self.err(at, "directory out of bounds"))
    }

    /// (suffix, value) of entry `i`.
    fn entry(&self, t: &Table, i: u64) -> Result<(u64, u64)> {
        let width = t.width();
        let bit = i * width;
        let s = t.suffix_bits();
        if width <= 64 {
            // Suffix and value in one read.
            return read_bits(self.data(), t.entries, bit, width as u32)
                .map(|x| (x & low_mask(s), x >> s))
                .ok_or_else(|| self.err(t.entries + (bit / 8) as usize, "entry out of bounds"));
        }
        let suffix = read_bits(self.data(), t.entries, bit, s);
        let value = read_bits(self.data(), t.entries, bit + u64::from(s), t.value_bits);
        match (suffix, value) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(self.err(t.entries + (bit / 8) as usize, "entry out of bounds")),
        }
    }

    /// Index range of the entries whose key is `key32`.
    fn lookup(&self, t: &Table, key32: u32) -> Result<(u64, u64)> {
        let s = t.suffix_bits();
        let slot = if t.prefix_bits == 0 {
            0
        } else {
            u64::from(key32 >> s)
        };
        let suffix = u64::from(key32) & low_mask(s);
        let (start, end) = (self.dir(t, slot)?, self.dir(t, slot + 1)?);
        if start > end || end > t.count {
            return Err(self.err(
                t.offset + slot as usize * 4,
                format!(
                    "directory slot {slot}: range {start}..{end} outside 0..{}",
                    t.count
                ),
            ));
        }
        let lower = |strict: bool| -> Result<u64> {
            let (mut lo, mut hi) = (start, end);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let (sfx, _) = self.entry(t, mid)?;
                if sfx < suffix || (strict && sfx == suffix) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            Ok(lo)
        };
        let (lo, hi) = (lower(false)?, lower(true)?);
        if lo > hi {
            return Err(self.err(
                t.offset + slot as usize * 4,
                format!("directory slot {slot}: entries not sorted"),
            ));
        }
        Ok((lo, hi))
    }

    /// Calls `f(index, key32, value)` for every entry in order, checking the directory.
    fn for_each_entry(
        &self,
        t: &Table,
        mut f: impl FnMut(u64, u32, u64) -> Result<()>,
    ) -> Result<()> {
        let s = t.suffix_bits();
        let mut prev = self.dir(t, 0)?;
        if prev != 0 {
            return Err(self.err(t.offset, "directory does not start at 0"));
        }
        for slot in 0..t.slots() {
            let next = self.dir(t, slot + 1)?;
            if next < prev || next > t.count {
                return Err(self.err(
                    t.offset + (slot as usize + 1) * 4,
                    format!("directory entry {next} out of order or past {}", t.count),
                ));
            }
            let high = if t.prefix_bits == 0 {
                0
            } else {
                (slot as u32) << s
            };
            for i in prev..next {
                let (sfx, value) = self.entry(t, i)?;
                f(i, high | sfx as u32, value)?;
            }
            prev = next;
        }
        if prev != t.count {
            return Err(self.err(
                t.offset + t.slots() as usize * 4,
                format!("directory ends at {prev}, table has {}", t.count),
            ));
        }
        Ok(())
    }

    fn entry_offset(&self, t: &Table, i: u64) -> usize {
        t.entries + ((i * t.width()) / 8) as usize
    }

    // --- documents ----------------------------------------------------------------------------

    /// (docno, key range) of the document at ordinal `i`.
    fn doc_at(&self, i: u64) -> Result<(u64, usize, usize)> {
        let l = &self.layout;
        let w = u64::from(l.docno_bits + l.end_bits);
        let read = |bit: u64, width: u32| {
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

    fn key_at(&self, i: u64) -> Result<(u64, &[u8])> {
        let (docno, s, e) = self.doc_at(i)?;
        let key = self
            .data()
            .get(s..e)
            .ok_or_else(|| self.err(s, "key out of bounds"))?;
        Ok((docno, key))
    }

    /// Ordinal of `docno` in the doc table.
    fn ordinal_of(&self, docno: u64) -> Result<Option<u64>> {
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
            let (d, _, _) = self.doc_at(mid)?;
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
        let (lo, hi) = self.lookup(&t, key_hash32(key))?;
        let mut found = None;
        for i in lo..hi {
            let (_, ordinal) = self.entry(&t, i)?;
            if ordinal >= self.layout.doc_count {
                return Err(self.err(self.entry_offset(&t, i), "key index names a missing doc"));
            }
            let (docno, k) = self.key_at(ordinal)?;
            if k == key && found.is_none_or(|f| f < docno) {
                found = Some(docno);
            }
        }
        Ok(found)
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

    fn band_table(&self, band: usize) -> Result<&Table> {
        self.layout.bands.get(band).ok_or_else(|| {
            Error::invalid(
                "band",
                format!("{band} is out of range for {} bands", self.layout.num_bands),
            )
        })
    }

    /// The docnos (ascending) of the bucket of `band_key` in `band`. Only the top 32 bits of
    /// `band_key` are compared, so rare false candidates are possible. If the bucket is hot
    /// ([`Segment::hot_bucket`]), only the lowest `cap` docnos are stored.
    pub fn postings(&self, band: usize, band_key: u64) -> Result<Postings<'_, B>> {
        let t = *self.band_table(band)?;
        let (lo, hi) = self.lookup(&t, band_key32(band_key))?;
        Ok(Postings {
            seg: self,
            table: t,
            next: lo,
            end: hi,
        })
    }

    /// Appends the docnos of [`Segment::postings`] to `out`.
    pub fn postings_into(&self, band: usize, band_key: u64, out: &mut Vec<u64>) -> Result<()> {
        let p = self.postings(band, band_key)?;
        out.reserve(p.len());
        for d in p {
            out.push(d?);
        }
        Ok(())
    }

    // --- hot buckets --------------------------------------------------------------------------

    fn hot_at(&self, i: u64) -> Result<HotBucket> {
        let at = self.layout.hot.0 + (i as usize) * HOT_RECORD_LEN;
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
        let mut record = |stats: &mut BucketStats, key: u32, size: u64| {
            let size = hot.remove(&key).unwrap_or(size);
            stats.buckets += 1;
            *stats.sizes.entry(size).or_insert(0) += 1;
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
        // Hot buckets whose stored documents are all gone.
        for (_, size) in std::mem::take(&mut hot) {
            stats.buckets += 1;
            *stats.sizes.entry(size).or_insert(0) += 1;
        }
        Ok(stats)
    }

    // --- verification -------------------------------------------------------------------------

    /// Checks every section's CRC: the bytes are as written. (Bit rot and torn or misdirected
    /// writes show up here; [`Segment::verify`] also checks the structure.)
    pub fn verify_checksums(&self) -> Result<()> {
        let data = self.data();
        for (i, &(kind, start, end, crc)) in self.layout.sections.iter().enumerate() {
            let bytes = data.get(start..end).unwrap_or_default();
            if crc32fast::hash(bytes) != crc {
                return Err(self.err(
                    start,
                    format!("section {i} (kind {kind}) checksum mismatch"),
                ));
            }
        }
        Ok(())
    }

    /// Checks every section checksum and every structural invariant of `format/segment.md`:
    /// sortedness, offsets and docnos in range, caps respected, key index consistent with the
    /// keys. O(file size) time for dense docno ranges; memory 8 bytes per document plus one bit
    /// per docno of the range (sparse ranges use a binary search instead of the bit per docno).
    pub fn verify(&self) -> Result<()> {
        self.verify_checksums()?;
        let l = &self.layout;

        // Doc table: docnos strictly increasing, key ends non-decreasing, last end = blob end.
        let mut prev_docno = None;
        let mut last_end = l.blob.0;
        // Decoded once so that checking each posting's docno is an in-memory binary search.
        let mut docnos = Vec::with_capacity(l.doc_count as usize);
        for i in 0..l.doc_count {
            let (docno, s, e) = self.doc_at(i)?;
            docnos.push(docno);
            if prev_docno.is_some_and(|p| p >= docno) || s != last_end {
                return Err(self.err(
                    l.docs + ((i * u64::from(l.docno_bits + l.end_bits)) / 8) as usize,
                    format!("doc {i}: docno {docno} or key start not in order"),
                ));
            }
            prev_docno = Some(docno);
            last_end = e;
        }
        if last_end != l.blob.1 {
            return Err(self.err(l.docs, "keys do not cover the key blob exactly"));
        }

        // Key index: a permutation of the docs, sorted by (hash32 of the key, ordinal).
        let t = l.key_index;
        let mut seen = vec![0u64; (l.doc_count as usize).div_ceil(64)];
        let mut prev: Option<(u32, u64)> = None;
        self.for_each_entry(&t, |i, hash, ordinal| {
            let at = self.entry_offset(&t, i);
            if prev.is_some_and(|p| p >= (hash, ordinal)) || ordinal >= l.doc_count {
                return Err(self.err(at, format!("key index entry {i} out of order or range")));
            }
            prev = Some((hash, ordinal));
            let (_, key) = self.key_at(ordinal)?;
            if key_hash32(key) != hash {
                return Err(self.err(at, format!("key index entry {i}: hash does not match key")));
            }
            mark(&mut seen, ordinal).ok_or_else(|| self.err(at, "doc indexed twice"))
        })?;

        // Bands. A posting's docno must be stored: checked with a bitmap over the range when
        // the range is dense (the usual case), by binary search otherwise. `slot_of` numbers the
        // stored docs for the "posted twice" bitmap.
        let dense = l.span <= 64 * l.doc_count.max(1024);
        let present = if dense {
            let mut bits = vec![0u64; (l.span as usize).div_ceil(64)];
            for &d in &docnos {
                mark(&mut bits, d - l.base);
            }
            bits
        } else {
            Vec::new()
        };
        let slot_of = |rel: u64| -> Option<u64> {
            if dense {
                let word = present.get((rel / 64) as usize)?;
                (word & (1 << (rel % 64)) != 0).then_some(rel)
            } else {
                let d = l.base.checked_add(rel)?;
                docnos.binary_search(&d).ok().map(|i| i as u64)
            }
        };
        let mut seen = vec![0u64; (if dense { l.span } else { l.doc_count } as usize).div_ceil(64)];
        let cap = u64::from(l.bucket_cap);
        for (band, t) in l.bands.iter().enumerate() {
            seen.fill(0);
            let mut prev: Option<(u32, u64)> = None;
            let mut run = 0u64;
            self.for_each_entry(t, |i, key, rel| {
                let at = self.entry_offset(t, i);
                if prev.is_some_and(|p| p >= (key, rel)) {
                    return Err(self.err(at, format!("band {band} entry {i} out of order")));
                }
                run = if prev.is_some_and(|p| p.0 == key) {
                    run + 1
                } else {
                    1
                };
                prev = Some((key, rel));
                if cap > 0 && run > cap {
                    return Err(self.err(at, format!("band {band}: bucket exceeds cap {cap}")));
                }
                let slot = slot_of(rel)
                    .ok_or_else(|| self.err(at, format!("band {band}: posting of absent doc")))?;
                mark(&mut seen, slot)
                    .ok_or_else(|| self.err(at, format!("band {band}: doc posted twice")))
            })?;
        }

        // Hot records: sorted by (band, key32), band in range, original size ≥ stored size.
        let mut prev: Option<(u32, u32)> = None;
        for i in 0..l.hot.1 {
            let h = self.hot_at(i)?;
            let at = l.hot.0 + i as usize * HOT_RECORD_LEN;
            if prev.is_some_and(|p| p >= (h.band, h.key32)) {
                return Err(self.err(at, format!("hot record {i} out of order")));
            }
            prev = Some((h.band, h.key32));
            let t = self
                .layout
                .bands
                .get(h.band as usize)
                .ok_or_else(|| self.err(at, format!("hot record {i}: no band {}", h.band)))?;
            let (lo, hi) = self.lookup(t, h.key32)?;
            if h.original_size < hi - lo {
                return Err(self.err(at, format!("hot record {i}: original size too small")));
            }
        }
        Ok(())
    }
}

/// Sets bit `i`; `None` when it was already set (or out of range).
fn mark(bits: &mut [u64], i: u64) -> Option<()> {
    let word = bits.get_mut((i / 64) as usize)?;
    let m = 1u64 << (i % 64);
    if *word & m != 0 {
        return None;
    }
    *word |= m;
    Some(())
}

/// Iterator over the docnos of one bucket, from [`Segment::postings`].
#[derive(Debug)]
pub struct Postings<'a, B> {
    seg: &'a Segment<B>,
    table: Table,
    next: u64,
    end: u64,
}

/// Prefetching for cold lookups: a lookup reads a directory slot, then the entries it points
/// to, then (for matches) a doc-table entry and a key, each read depending on the one before.
/// On a cold page cache each is a disk read; asking for all of one level's pages of a query at
/// once lets the disk serve them together. These calls only hint (nothing is read or checked).
impl<B: AsRef<[u8]> + Prefetch> Segment<B> {
    fn directory_slot(t: &Table, key32: u32) -> u64 {
        if t.prefix_bits == 0 {
            0
        } else {
            u64::from(key32 >> t.suffix_bits())
        }
    }

    /// Prefetches the directory of every band (about 0.26 B per posting).
    pub fn prefetch_directories(&self) {
        for t in &self.layout.bands {
            self.bytes.prefetch(t.offset, (t.slots() as usize + 1) * 4);
        }
    }

    /// Reads the directory slot a lookup of `band_key` in `band` reads first (to time it).
    pub fn touch_bucket_directory(&self, band: usize, band_key: u64) {
        if let Some(t) = self.layout.bands.get(band) {
            let slot = Self::directory_slot(t, band_key32(band_key));
            std::hint::black_box(self.dir(t, slot).ok());
        }
    }

    /// Prefetches the directory slots a lookup of `band_key` in `band` reads first.
    pub fn prefetch_bucket_directory(&self, band: usize, band_key: u64) {
        if let Some(t) = self.layout.bands.get(band) {
            let slot = Self::directory_slot(t, band_key32(band_key));
            self.bytes.prefetch(t.offset + slot as usize * 4, 8);
        }
    }

    /// Prefetches the entries the bucket's directory slots point to (reading the directory,
    /// which [`Segment::prefetch_bucket_directory`] should have asked for first).
    pub fn prefetch_bucket_entries(&self, band: usize, band_key: u64) {
        let Some(t) = self.layout.bands.get(band) else {
            return;
        };
        let slot = Self::directory_slot(t, band_key32(band_key));
        if let (Ok(start), Ok(end)) = (self.dir(t, slot), self.dir(t, slot + 1))
            && start < end
            && end <= t.count
        {
            let (from, to) = (self.entry_offset(t, start), self.entry_offset(t, end - 1));
            self.bytes.prefetch(from, to - from + 16);
        }
    }

    /// Prefetches the doc-table entries [`Segment::key_of`] searches for `docno`.
    pub fn prefetch_doc_entry(&self, docno: u64) {
        let l = &self.layout;
        if docno < l.base || docno >= self.end_docno() {
            return;
        }
        let rel = docno - l.base;
        let holes = l.span.saturating_sub(l.doc_count);
        let lo = rel.saturating_sub(holes).saturating_sub(1);
        let hi = (rel + 1).min(l.doc_count).max(lo);
        let w = u64::from(l.docno_bits + l.end_bits);
        let byte = |i: u64| l.docs.saturating_add((i.saturating_mul(w) / 8) as usize);
        let (from, to) = (byte(lo), byte(hi));
        self.bytes.prefetch(from, to - from + 16);
    }

    /// Prefetches the key bytes of `docno` (reading its doc-table entry, which
    /// [`Segment::prefetch_doc_entry`] should have asked for first).
    pub fn prefetch_key(&self, docno: u64) {
        if let Ok(Some(i)) = self.ordinal_of(docno)
            && let Ok((_, s, e)) = self.doc_at(i)
        {
            self.bytes.prefetch(s, e - s);
        }
    }
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

// ---------------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------------

/// Merges segments with disjoint docno ranges, given oldest first, into one new segment
/// covering `[inputs[0].base, inputs[last].end)`. Documents for which `is_live(docno)` is false
/// are dropped; bucket caps of `opts` are re-applied over the surviving documents. Every input
/// is [verified](Segment::verify) first, so corruption is never copied into a fresh checksum.
///
/// Documents an input dropped because of a cap stay dropped; their count is carried into the
/// hot record of the merged bucket (see `format/segment.md`).
pub fn merge<B: AsRef<[u8]> + Sync>(
    inputs: &[&Segment<B>],
    is_live: impl Fn(u64) -> bool + Sync,
    opts: &SegmentOptions,
) -> Result<Vec<u8>> {
    let cap = opts.cap_field()?;
    let (first, last) = match (inputs.first(), inputs.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err(Error::invalid("inputs", "merge needs at least one segment")),
    };
    let num_bands = first.num_bands();
    let mut prev_end = first.base_docno();
    for s in inputs {
        if s.num_bands() != num_bands {
            return Err(Error::invalid(
                "inputs",
                "segments have different band counts",
            ));
        }
        if s.base_docno() < prev_end {
            return Err(Error::invalid(
                "inputs",
                "segments must be given oldest first with disjoint docno ranges",
            ));
        }
        prev_end = s.end_docno();
        // Checksums, so that damage is never laundered into a new segment with fresh ones.
        // (The structure was checked when the segment was written; what this merge decodes it
        // checks again as it goes. `mhdb verify` runs the full check.)
        s.verify_checksums()?;
    }
    let mut docnos = Vec::new();
    let mut key_blob = Vec::new();
    let mut key_ends = Vec::new();
    for s in inputs {
        for doc in s.docs() {
            let (docno, key) = doc?;
            if is_live(docno) {
                docnos.push(docno);
                key_blob.extend_from_slice(key);
                key_ends.push(key_blob.len() as u64);
            }
        }
    }
    if docnos.len() > u32::MAX as usize {
        return Err(Error::invalid(
            "inputs",
            "more than 2^32 − 1 live documents",
        ));
    }
    let draft = Draft {
        num_bands: num_bands as u32,
        base: first.base_docno(),
        span: last.end_docno() - first.base_docno(),
        cap,
        docnos: &docnos,
        key_blob: &key_blob,
        key_ends: &key_ends,
        sorted_runs: true,
    };
    // Buckets already hot in the inputs, per band: (key32, documents dropped by earlier caps).
    let mut prior_hot_by_band: Vec<Vec<(u32, u64)>> = vec![Vec::new(); num_bands];
    for s in inputs {
        for h in s.hot_buckets() {
            let h = h?;
            let t = *s.band_table(h.band as usize)?;
            let (lo, hi) = s.lookup(&t, h.key32)?;
            if let Some(list) = prior_hot_by_band.get_mut(h.band as usize) {
                list.push((h.key32, h.original_size.saturating_sub(hi - lo)));
            }
        }
    }
    draft.encode(|band| {
        let total: u64 = inputs.iter().filter_map(|s| s.band_postings(band)).sum();
        let mut postings = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for s in inputs {
            let t = *s.band_table(band)?;
            s.for_each_entry(&t, |_, key, rel| {
                let docno = s.base_docno() + rel;
                if is_live(docno) {
                    postings.push((key, docno));
                }
                Ok(())
            })?;
        }
        let prior_hot = prior_hot_by_band.get(band).cloned().unwrap_or_default();
        Ok((postings, prior_hot))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The word-at-a-time writer lays out bits exactly as writing them one by one would
    /// (LSB first), for every width, and `read_bits` reads each field back.
    #[test]
    fn bit_writer_matches_a_bit_by_bit_reference() {
        let mut rng = 1u64;
        for round in 0..200 {
            let fields: Vec<(u64, u32)> = (0..(round % 40))
                .map(|_| {
                    let width = (next(&mut rng) % 65) as u32;
                    (next(&mut rng) & low_mask(width), width)
                })
                .collect();
            let mut w = BitWriter::new(0);
            let mut reference: Vec<u8> = Vec::new();
            let mut bit = 0usize;
            for &(value, width) in &fields {
                w.push(value, width);
                for b in 0..width {
                    if bit.is_multiple_of(8) {
                        reference.push(0);
                    }
                    if let Some(last) = reference.last_mut().filter(|_| (value >> b) & 1 == 1) {
                        *last |= 1 << (bit % 8);
                    }
                    bit += 1;
                }
            }
            let bytes = w.finish();
            assert_eq!(bytes, reference, "fields {fields:?}");
            let mut at = 0u64;
            for &(value, width) in &fields {
                assert_eq!(read_bits(&bytes, 0, at, width), Some(value));
                at += u64::from(width);
            }
        }
    }

    /// Packed sorting (either kind) orders postings exactly as sorting the pairs does, and
    /// postings too far from the base for the packed form take the pair sort.
    #[test]
    fn packed_posting_sort_equals_pair_sort() {
        let mut rng = 7u64;
        for (base, spread) in [(0u64, 1u64 << 20), (1_000, 5_000), (3, 1u64 << 33)] {
            for runs in 1..4 {
                let mut postings: Vec<(u32, u64)> = Vec::new();
                for _ in 0..runs {
                    let mut run: Vec<(u32, u64)> = (0..500)
                        .map(|_| {
                            (
                                (next(&mut rng) % 64) as u32 * 0x0400_0001,
                                base + next(&mut rng) % spread,
                            )
                        })
                        .collect();
                    run.sort_unstable();
                    postings.extend(run);
                }
                let mut expected = postings.clone();
                expected.sort_unstable();
                for sorted_runs in [false, true] {
                    let mut got = postings.clone();
                    sort_postings(&mut got, base, sorted_runs);
                    assert_eq!(got, expected, "base {base}, spread {spread}, runs {runs}");
                }
            }
        }
    }
}
