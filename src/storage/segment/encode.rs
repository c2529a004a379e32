//! The one segment encoder, shared by [`SegmentBuilder`](super::SegmentBuilder) and
//! [`combine_segments`](super::combine_segments): per band it sorts the postings, applies the
//! bucket cap (recording hot buckets), and encodes the prefix tables; then it lays out the
//! sections, section table, header and footer of `format/segment.md`. Because both callers
//! go through this one function, combining uncapped segments writes exactly the bytes that
//! building from the surviving documents does (`tests/segment_format.rs` checks this).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use rayon::prelude::*;
use zerocopy::IntoBytes;
use zerocopy::little_endian::{U16, U32, U64};

use super::band_filter::{FilterParams, KIND_BLOCKED_BLOOM};
use super::bits::{BitWriter, bits_below, bits_for};
use super::builder::SegmentParts;
use super::checksums::{BlockCrcs, section_crc};
use super::columns::ColumnSection;
use super::format::{
    FLAG_BAND_FILTER, FLAG_SHINGLES, FOOTER_LEN, Footer, HEADER_LEN, HEADER_V3_LEN, Header,
    HotRecord, IDENTITY_TAIL_OFFSET, IdentityTail, KIND_BAND, KIND_BAND_FILTER, KIND_CHECKSUMS,
    KIND_DOC_TABLE, KIND_HOT, KIND_KEY_BLOB, KIND_KEY_INDEX, KIND_SHINGLES, KIND_SIGNATURES,
    SECTION_ENTRY_LEN, SEGMENT_FOOTER_MAGIC, SEGMENT_FORMAT_V2, SEGMENT_FORMAT_V3, SEGMENT_MAGIC,
    SectionEntry, key_hash32, meta_crc,
};
use super::prefix::encode_prefix_table;
use crate::Result;
use crate::storage::identity::FileIdentity;

/// A BAND_FILTER section's bytes, and the distinct keys it holds (its `count`).
type FilterSection = (Vec<u8>, u64);

/// One band encoded: table bytes, prefix bits, posting count, hot records, and its filter
/// when the segment has filters.
struct EncodedBand {
    table: Vec<u8>,
    prefix_bits: u32,
    postings: u64,
    hot: Vec<HotRecord>,
    filter: Option<FilterSection>,
}

/// The BAND_FILTER section of `band`: a filter of every key32 a lookup in the band can find,
/// those of its postings (`kept`, sorted by key) and of its hot records (a hot bucket whose
/// documents were all dropped is still answered), and how many distinct keys that is.
fn band_filter(band: u32, kept: &[(u32, u64)], hot: &[HotRecord]) -> FilterSection {
    let mut keys: Vec<u32> = kept.iter().map(|&(k, _)| k).collect();
    keys.extend(hot.iter().map(|h| h.key32.get()));
    if !hot.is_empty() {
        keys.sort_unstable();
    }
    keys.dedup();
    let params = FilterParams::for_keys(keys.len(), band);
    (super::band_filter::build(&keys, params), keys.len() as u64)
}

/// Sorts one band's postings, applies the cap (a bucket over it keeps the `cap` documents
/// whose keys hash lowest, [`cap_rank`]) and appends the band's hot
/// records to `hot`. `prior_hot` lists `(key32, documents dropped by
/// earlier caps)` for buckets that were hot in the inputs of a combine; such buckets stay hot.
/// Returns `(key32, docno − base)` sorted.
fn apply_cap(
    draft: &Draft<'_>,
    band: u32,
    mut postings: Vec<(u32, u64)>,
    prior_hot: Vec<(u32, u64)>,
    hot: &mut Vec<HotRecord>,
) -> Vec<(u32, u64)> {
    let cap = draft.cap;
    sort_postings(&mut postings, draft.base, draft.sorted_runs);
    let mut record = |key32: u32, original_size: u64| {
        hot.push(HotRecord {
            band: U32::new(band),
            key32: U32::new(key32),
            original_size: U64::new(original_size),
        })
    };
    let mut prior = sum_prior_hot(prior_hot).into_iter().peekable();
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
        let group = postings.get(i..j).unwrap_or_default();
        keep_of_bucket(draft, group, keep as usize, &mut kept);
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

/// `prior_hot` sorted by key, the dropped counts of a bucket that was hot in several inputs
/// summed.
fn sum_prior_hot(mut prior_hot: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
    prior_hot.sort_unstable();
    let mut prior: Vec<(u32, u64)> = Vec::with_capacity(prior_hot.len());
    for (k, extra) in prior_hot {
        match prior.last_mut() {
            Some(last) if last.0 == k => last.1 = last.1.saturating_add(extra),
            _ => prior.push((k, extra)),
        }
    }
    prior
}

/// Appends to `kept` the `keep` postings of one bucket's `group` (`(key32, docno)`, sorted)
/// that its cap keeps, as `(key32, docno − base)` in docno order.
fn keep_of_bucket(
    draft: &Draft<'_>,
    group: &[(u32, u64)],
    keep: usize,
    kept: &mut Vec<(u32, u64)>,
) {
    let base = draft.base;
    if keep >= group.len() {
        kept.extend(group.iter().map(|&(k, d)| (k, d - base)));
        return;
    }
    // Decided by the documents' keys, not their docnos: indexes built apart (shards, another
    // insertion order) keep the same documents of a bucket.
    let mut ranked: Vec<(u64, u64)> = group
        .iter()
        .map(|&(_, d)| (draft.cap_rank_of(d), d))
        .collect();
    keep_lowest_ranked(&mut ranked, keep);
    let mut docnos: Vec<u64> = ranked.into_iter().map(|(_, d)| d).collect();
    docnos.sort_unstable();
    let k = group.first().map_or(0, |&(k, _)| k);
    kept.extend(docnos.into_iter().map(|d| (k, d - base)));
}

/// Sorts `(key32, docno)` postings. When every docno is within 2^32 of `base` (always, unless
/// a segment's docno range is wider than that), each posting packs into one `u64` with the
/// key in the high half, which sorts in the same order at half the memory traffic of the
/// pairs. With `sorted_runs` (a combine: one sorted run per input segment) the stable sort,
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
pub(super) struct Draft<'a> {
    pub(super) num_bands: u32,
    pub(super) base: u64,
    pub(super) span: u64,
    pub(super) cap: u32,
    pub(super) docnos: &'a [u64],
    pub(super) key_blob: &'a [u8],
    pub(super) key_ends: &'a [u64],
    /// Bytes of one packed signature (0: the segment stores none); the signatures come
    /// after encoding ([`Encoded::into_parts`], [`Encoded::write`]).
    pub(super) record_bytes: u32,
    /// The SHINGLES section's bytes (offset table, then the coded sets), when the segment
    /// stores shingle sets.
    pub(super) sets: Option<&'a [u8]>,
    /// The per-document column sections, in file order (version 3 only).
    pub(super) columns: &'a [ColumnSection],
    /// Whether the segment carries a BAND_FILTER section per band (version 3 only).
    pub(super) band_filters: bool,
    /// Each band's postings arrive as sorted runs (a combine) rather than unordered (a build).
    pub(super) sorted_runs: bool,
    /// The identity to write: a version-3 segment with it, a version-2 one without.
    pub(super) identity: Option<FileIdentity>,
}

/// A segment encoded by [`Draft::encode`] up to its signatures: the file's bytes before the
/// SIGNATURES section (the head, header included), and the sections laid out so far. What
/// follows (SIGNATURES, CHECKSUMS, the table and footer) is laid out once the signatures'
/// checksums are known: from the signatures in memory ([`Encoded::into_parts`]), or as they
/// are produced and written ([`Encoded::write`]).
pub(super) struct Encoded {
    w: SectionWriter,
    doc_count: u64,
    record_bytes: u32,
}

impl Encoded {
    /// The file's bytes before the SIGNATURES section.
    pub(super) fn head(&self) -> &[u8] {
        &self.w.out
    }

    /// The length of the file's header (64, or 96 in version 3).
    pub(super) fn header_len(&self) -> usize {
        self.w.header_len
    }

    /// The documents the segment holds.
    pub(super) fn doc_count(&self) -> u64 {
        self.doc_count
    }

    /// Bytes of one packed signature.
    pub(super) fn record_bytes(&self) -> usize {
        self.record_bytes as usize
    }

    /// The file's parts, `signatures` (`record_bytes` per document, in ordinal order) in
    /// their place.
    pub(super) fn into_parts(self, signatures: Vec<u8>) -> Result<SegmentParts> {
        let want = self.doc_count.saturating_mul(u64::from(self.record_bytes));
        if signatures.len() as u64 != want {
            return Err(crate::Error::invalid(
                "signatures",
                format!(
                    "{} bytes for {} documents of {} bytes",
                    signatures.len(),
                    self.doc_count,
                    self.record_bytes
                ),
            ));
        }
        let mut blocks = BlockCrcs::new(self.header_len());
        blocks.update(self.head().get(self.header_len()..).unwrap_or_default());
        blocks.update(&signatures);
        let doc_count = self.doc_count;
        let (head, tail, meta_crc) =
            self.finish(signatures.len(), section_crc(&signatures), blocks);
        Ok(SegmentParts {
            head,
            signatures,
            tail,
            meta_crc,
            doc_count,
        })
    }

    /// The sections from SIGNATURES on (`signatures_len` bytes with CRC `signatures_crc`,
    /// `blocks` fed every byte from the header's end to the signatures' end), the table and
    /// footer: returns the head, the bytes after the signatures, and the metadata checksum.
    pub(super) fn finish(
        self,
        signatures_len: usize,
        signatures_crc: u32,
        blocks: BlockCrcs,
    ) -> (Vec<u8>, Vec<u8>, u32) {
        let mut w = self.w;
        let split = w.out.len();
        w.push_signatures(self.doc_count, signatures_len, signatures_crc);
        // Block checksums over every section so far, so that a reader can check the bytes it
        // uses, 4 KiB at a time, the first time it uses them.
        let checksums = blocks.finish();
        w.push(
            KIND_CHECKSUMS,
            (0, 0, 0),
            (checksums.len() / 4) as u64,
            &checksums,
        );
        let (mut head, meta_crc) = w.finish();
        let tail = head.split_off(split);
        (head, tail, meta_crc)
    }
}

pub(super) type BandInput = (Vec<(u32, u64)>, Vec<(u32, u64)>);

/// What a bucket cap ranks a document by: the xxh3-64 of its key (lowest kept first, ties by
/// docno). The same rule everywhere a cap applies (segments, `dedup`, `mhdb.spark`), so that
/// it depends on the documents, not on where or in which order they were inserted.
pub fn cap_rank(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// Keeps the `keep` lowest of `ranked` ([`cap_rank`], docno) pairs, in no particular order:
/// which documents a cap keeps, chosen in linear time (every caller sorts what it keeps by
/// docno afterwards, so the whole bucket need not be sorted). The pairs are distinct, so the
/// choice is the same whatever their order.
pub(crate) fn keep_lowest_ranked(ranked: &mut Vec<(u64, u64)>, keep: usize) {
    if ranked.len() > keep {
        ranked.select_nth_unstable(keep);
        ranked.truncate(keep);
    }
}

impl Draft<'_> {
    /// [`cap_rank`] of the key of `docno` (one of `docnos`).
    fn cap_rank_of(&self, docno: u64) -> u64 {
        let Ok(i) = self.docnos.binary_search(&docno) else {
            return u64::MAX;
        };
        let start = i
            .checked_sub(1)
            .and_then(|p| self.key_ends.get(p))
            .map_or(0, |&e| e as usize);
        let end = self.key_ends.get(i).map_or(start, |&e| e as usize);
        cap_rank(self.key_blob.get(start..end).unwrap_or_default())
    }

    /// `band_input(band)` returns that band's postings `(key32, docno)` (any order) and the
    /// buckets already hot in the inputs, `(key32, documents dropped by earlier caps)`.
    /// Returns the file's bytes without the signatures, the offset where they go, and the
    /// metadata checksum.
    pub(super) fn encode(
        &self,
        band_input: impl Fn(usize) -> Result<BandInput> + Sync,
    ) -> Result<Encoded> {
        let doc_count = self.check_parts()?;
        let docno_bits = bits_below(self.span);
        let end_bits = bits_for(self.key_blob.len() as u64);
        let index_bits = bits_below(doc_count);
        // The doc table and key index on one side, the bands (each gathered, sorted, capped
        // and encoded) on the other, on every core.
        let (front, bands) = rayon::join(
            || -> Result<(Vec<u8>, Vec<u8>, u32)> {
                let doc_table = self.doc_table(docno_bits, end_bits);
                let (index_table, index_prefix) = self.key_index(index_bits)?;
                Ok((doc_table, index_table, index_prefix))
            },
            || self.encode_bands(&band_input, docno_bits),
        );
        let (doc_table, index_table, index_prefix) = front?;
        let header = self.header(doc_count);
        let mut w = SectionWriter::new(self.num_bands, &header);
        w.out
            .reserve(self.capacity_hint(&doc_table, &index_table, &bands));
        w.push(
            KIND_KEY_BLOB,
            (0, 0, 0),
            self.key_blob.len() as u64,
            self.key_blob,
        );
        w.push(
            KIND_DOC_TABLE,
            (docno_bits, end_bits, 0),
            doc_count,
            &doc_table,
        );
        w.push(
            KIND_KEY_INDEX,
            (index_prefix, index_bits, 0),
            doc_count,
            &index_table,
        );
        let (hot, filters) = w.push_bands(bands, docno_bits)?;
        let hot_bytes: Vec<u8> = hot.iter().flat_map(|h| h.as_bytes().to_vec()).collect();
        w.push(KIND_HOT, (0, 0, 0), hot.len() as u64, &hot_bytes);
        if let Some(sets) = self.sets {
            w.push(KIND_SHINGLES, (0, 0, 0), doc_count, sets);
        }
        for c in self.columns {
            w.push(c.kind, (c.width_a, 0, 0), doc_count, &c.bytes);
        }
        w.push_filters(filters);
        Ok(Encoded {
            w,
            doc_count,
            record_bytes: self.record_bytes,
        })
    }

    /// The number of documents, once the optional parts are checked to be allowed.
    fn check_parts(&self) -> Result<u64> {
        let doc_count = self.docnos.len() as u64;
        if !self.columns.is_empty() && self.identity.is_none() {
            return Err(crate::Error::invalid(
                "columns",
                "only a version-3 segment (one with an identity) has per-document columns",
            ));
        }
        if self.band_filters && self.identity.is_none() {
            return Err(crate::Error::invalid(
                "band_filters",
                "only a version-3 segment (one with an identity) has band filters",
            ));
        }
        Ok(doc_count)
    }

    /// The DOC_TABLE section: each document's `docno − base` and key end, bit-packed.
    fn doc_table(&self, docno_bits: u32, end_bits: u32) -> Vec<u8> {
        let mut w = BitWriter::new(0);
        for (&d, &e) in self.docnos.iter().zip(self.key_ends) {
            w.push(d - self.base, docno_bits);
            w.push(e, end_bits);
        }
        w.finish()
    }

    /// The KEY_INDEX section, `(key hash, ordinal)` sorted in a prefix table, and its prefix
    /// bits.
    fn key_index(&self, index_bits: u32) -> Result<(Vec<u8>, u32)> {
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
        encode_prefix_table(&index, index_bits)
    }

    /// Every band gathered, sorted, capped and encoded, in parallel; in band order.
    fn encode_bands(
        &self,
        band_input: &(impl Fn(usize) -> Result<BandInput> + Sync),
        docno_bits: u32,
    ) -> Vec<Result<EncodedBand>> {
        (0..self.num_bands as usize)
            .into_par_iter()
            .map(|band| {
                let (postings, prior_hot) = band_input(band)?;
                let mut band_hot = Vec::new();
                let kept = apply_cap(self, band as u32, postings, prior_hot, &mut band_hot);
                let filter = self
                    .band_filters
                    .then(|| band_filter(band as u32, &kept, &band_hot));
                let (table, prefix_bits) = encode_prefix_table(&kept, docno_bits)?;
                Ok(EncodedBand {
                    table,
                    prefix_bits,
                    postings: kept.len() as u64,
                    hot: band_hot,
                    filter,
                })
            })
            .collect()
    }

    /// Bytes to reserve for the file but its signatures beyond the header: every section, the
    /// block checksums of all but the signatures (4 per 4 KiB, taken as one per thousand), the
    /// table and footer.
    fn capacity_hint(
        &self,
        doc_table: &[u8],
        index_table: &[u8],
        bands: &[Result<EncodedBand>],
    ) -> usize {
        let band_bytes: usize = bands
            .iter()
            .map(|r| {
                r.as_ref().map_or(0, |b| {
                    b.table.len() + b.filter.as_ref().map_or(0, |(f, _)| f.len())
                })
            })
            .sum();
        self.key_blob.len()
            + doc_table.len()
            + index_table.len()
            + band_bytes
            + self.sets.map_or(0, <[u8]>::len)
            + self.columns.iter().map(|c| c.bytes.len()).sum::<usize>()
            + (HEADER_LEN + band_bytes) / 1000
            + SECTION_ENTRY_LEN * (self.num_bands as usize + 7)
            + FOOTER_LEN
    }

    /// The header of the segment being encoded: version 2's 64 bytes without an identity,
    /// version 3's 96 with one (its flags saying which optional sections follow).
    fn header(&self, doc_count: u64) -> Vec<u8> {
        let (version, flags) = match self.identity {
            None => (SEGMENT_FORMAT_V2, 0),
            Some(_) => {
                let sets = if self.sets.is_some() {
                    FLAG_SHINGLES
                } else {
                    0
                };
                let columns = self.columns.iter().fold(0, |all, c| all | c.flag);
                let filters = if self.band_filters {
                    FLAG_BAND_FILTER
                } else {
                    0
                };
                (SEGMENT_FORMAT_V3, sets | columns | filters)
            }
        };
        let header = Header {
            magic: SEGMENT_MAGIC,
            version: U32::new(version),
            flags: U32::new(flags),
            num_bands: U32::new(self.num_bands),
            bucket_cap: U32::new(self.cap),
            base_docno: U64::new(self.base),
            span: U64::new(self.span),
            doc_count: U64::new(doc_count),
            record_bytes: U32::new(self.record_bytes),
            reserved: [0; 12],
        };
        let mut bytes = header.as_bytes().to_vec();
        if let Some(id) = self.identity {
            bytes.truncate(IDENTITY_TAIL_OFFSET);
            let tail = IdentityTail {
                reserved: [0; 4],
                db_id: id.db_id.0,
                file_id: U64::new(id.file_id),
                reserved_end: [0; 16],
            };
            bytes.extend_from_slice(tail.as_bytes());
            debug_assert_eq!(bytes.len(), HEADER_V3_LEN);
        }
        bytes
    }
}

/// Lays out the file: the header, sections appended in order, each with its table entry, then
/// the table and footer. The signatures are not copied into `out`: the file is `out[..split]`,
/// the signatures, then `out[split..]` (a bulk insert's signatures are most of its segment,
/// and a second copy of them costs more than the encoding); `gap`, their length once they are
/// pushed, keeps the offsets of what follows them the file's.
struct SectionWriter {
    out: Vec<u8>,
    header_len: usize,
    sections: Vec<SectionEntry>,
    gap: usize,
}

impl SectionWriter {
    /// A writer of a file that starts with `header`.
    fn new(num_bands: u32, header: &[u8]) -> Self {
        SectionWriter {
            out: header.to_vec(),
            header_len: header.len(),
            sections: Vec::with_capacity(num_bands as usize + 7),
            gap: 0,
        }
    }

    /// The table entry of a section of `len` bytes whose CRC is `crc`, starting at the end of
    /// what is written: `(width_a, width_b, index)` and `count` as `format/segment.md` defines
    /// them per kind.
    fn entry(
        &self,
        kind: u16,
        (a, b, index): (u32, u32, u32),
        count: u64,
        (len, crc): (usize, u32),
    ) -> SectionEntry {
        SectionEntry {
            kind: U16::new(kind),
            width_a: a as u8,
            width_b: b as u8,
            index: U32::new(index),
            offset: U64::new((self.out.len() + self.gap) as u64),
            len: U64::new(len as u64),
            count: U64::new(count),
            crc32: U32::new(crc),
            reserved: U32::new(0),
        }
    }

    /// Appends a section and its table entry.
    fn push(&mut self, kind: u16, widths: (u32, u32, u32), count: u64, bytes: &[u8]) {
        let entry = self.entry(kind, widths, count, (bytes.len(), section_crc(bytes)));
        self.sections.push(entry);
        self.out.extend_from_slice(bytes);
    }

    /// Enters the SIGNATURES section, `len` bytes with CRC `crc`, without its bytes (see the
    /// type's description).
    fn push_signatures(&mut self, doc_count: u64, len: usize, crc: u32) {
        let entry = self.entry(KIND_SIGNATURES, (0, 0, 0), doc_count, (len, crc));
        self.sections.push(entry);
        self.gap = len;
    }

    /// Appends the bands, in order (the first failed band's error if one failed); returns
    /// their hot records and their filters (bytes, distinct keys), in band order.
    fn push_bands(
        &mut self,
        bands: Vec<Result<EncodedBand>>,
        docno_bits: u32,
    ) -> Result<(Vec<HotRecord>, Vec<FilterSection>)> {
        let mut hot: Vec<HotRecord> = Vec::new();
        let mut filters = Vec::new();
        for (band, result) in bands.into_iter().enumerate() {
            let b = result?;
            hot.extend(b.hot);
            filters.extend(b.filter);
            let widths = (b.prefix_bits, docno_bits, band as u32);
            self.push(KIND_BAND, widths, b.postings, &b.table);
        }
        Ok((hot, filters))
    }

    /// Appends the BAND_FILTER sections (one per band, in band order; none without filters).
    fn push_filters(&mut self, filters: Vec<FilterSection>) {
        for (band, (bytes, distinct)) in filters.into_iter().enumerate() {
            let widths = (KIND_BLOCKED_BLOOM, 0, band as u32);
            self.push(KIND_BAND_FILTER, widths, distinct, &bytes);
        }
    }

    /// The section table and the footer (with the metadata checksum): the file's bytes but
    /// the signatures, and that checksum.
    fn finish(mut self) -> (Vec<u8>, u32) {
        let table_at = self.out.len();
        let section_table_offset = (table_at + self.gap) as u64;
        for s in &self.sections {
            self.out.extend_from_slice(s.as_bytes());
        }
        let header = self.out.get(..self.header_len).unwrap_or_default();
        let mut footer = Footer {
            section_table_offset: U64::new(section_table_offset),
            num_sections: U32::new(self.sections.len() as u32),
            reserved: U32::new(0),
            file_len: U64::new((self.out.len() + self.gap + FOOTER_LEN) as u64),
            meta_crc: U32::new(0),
            magic: SEGMENT_FOOTER_MAGIC,
        };
        let crc = meta_crc(
            header,
            self.out.get(table_at..).unwrap_or_default(),
            footer.as_bytes(),
        );
        footer.meta_crc = U32::new(crc);
        self.out.extend_from_slice(footer.as_bytes());
        (self.out, crc)
    }
}

/// A SHINGLES section's bytes from where each coded set ends in `data` (sets back to back):
/// `ends.len() + 1` little-endian u64 offsets into the data (0 first), then the data
/// (`format/segment.md`).
pub(super) fn sets_section(ends: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity((ends.len() + 1) * 8 + data.len());
    out.extend_from_slice(&0u64.to_le_bytes());
    for e in ends {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::super::test_rng::next;
    use super::*;

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
