//! Full verification of a segment against `format/segment.md`: every section checksum, then
//! every structural invariant (order, ranges, caps, the key index against the keys). Opening
//! checks only the metadata; combining checks the inputs' checksums, and the database's
//! verify runs the full check.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::band_filter;
use super::format::{HOT_RECORD_LEN, key_hash32};
use super::reader::Segment;
use crate::Result;
use crate::storage::shingle_codec::decode_into;

impl<B: AsRef<[u8]>> Segment<B> {
    /// Checks every section's CRC: the bytes are as written. (Bit rot and torn or misdirected
    /// writes show up here; [`Segment::verify`] also checks the structure.)
    pub fn verify_checksums(&self) -> Result<()> {
        self.check_all_blocks()?;
        let data = self.data();
        for (i, &(kind, start, end, crc)) in self.layout.sections.iter().enumerate() {
            let bytes = data.get(start..end).unwrap_or_default();
            if crc_reading_ahead(bytes) != crc {
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
        let docnos = self.verify_doc_table()?;
        self.verify_sets()?;
        self.verify_columns()?;
        self.verify_key_index()?;
        self.verify_bands(&docnos)?;
        self.verify_hot()?;
        self.verify_filters()
    }

    /// Doc table: docnos strictly increasing, key ends non-decreasing, last end = blob end.
    /// Returns the docnos (decoded once, so that checking each posting's docno is an
    /// in-memory binary search).
    fn verify_doc_table(&self) -> Result<Vec<u64>> {
        let l = &self.layout;
        let mut prev_docno = None;
        let mut last_end = l.blob.0;
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
        Ok(docnos)
    }

    /// Shingle sets: offsets in order, the last one at the section's end, every set
    /// decoding to sorted distinct values.
    fn verify_sets(&self) -> Result<()> {
        let l = &self.layout;
        let Some(sets) = l.sets else {
            return Ok(());
        };
        let mut scratch = Vec::new();
        for i in 0..l.doc_count {
            let coded = self.set_at(i)?;
            if let Err(e) = decode_into(coded, &mut scratch) {
                let at = coded.as_ptr() as usize - self.data().as_ptr() as usize;
                return Err(self.err(at + e.offset, format!("document {i}: {e}")));
            }
        }
        let u64_at = |at: usize| {
            self.data()
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
        };
        let end = u64_at(sets.offsets + l.doc_count as usize * 8);
        let first = u64_at(sets.offsets);
        if first != Some(0) || end != Some((sets.end - sets.data) as u64) {
            return Err(self.err(sets.offsets, "shingle sets do not cover their section"));
        }
        Ok(())
    }

    /// Key index: a permutation of the docs, sorted by (hash32 of the key, ordinal).
    fn verify_key_index(&self) -> Result<()> {
        let l = &self.layout;
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
        })
    }

    /// Bands: each sorted, every bucket within the cap, every posting of a stored document
    /// and no document posted twice in one band.
    fn verify_bands(&self, docnos: &[u64]) -> Result<()> {
        let l = &self.layout;
        let stored = StoredDocs::new(l.base, l.span, docnos);
        let mut seen = vec![0u64; stored.slots().div_ceil(64)];
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
                let slot = stored
                    .slot_of(rel)
                    .ok_or_else(|| self.err(at, format!("band {band}: posting of absent doc")))?;
                mark(&mut seen, slot)
                    .ok_or_else(|| self.err(at, format!("band {band}: doc posted twice")))
            })?;
        }
        Ok(())
    }

    /// Hot records: sorted by (band, key32), band in range, original size ≥ stored size.
    fn verify_hot(&self) -> Result<()> {
        let l = &self.layout;
        let mut prev: Option<(u32, u32)> = None;
        for i in 0..l.hot.1 {
            let h = self.hot_at(i)?;
            let at = l.hot.0 + i as usize * HOT_RECORD_LEN;
            if prev.is_some_and(|p| p >= (h.band, h.key32)) {
                return Err(self.err(at, format!("hot record {i} out of order")));
            }
            prev = Some((h.band, h.key32));
            let t = l
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

impl<B: AsRef<[u8]>> Segment<B> {
    /// Band filters: each reports present every key a lookup in its band can find (those of
    /// the band's postings and hot records; a filter that hid one would lose matches), and
    /// counts exactly those keys.
    fn verify_filters(&self) -> Result<()> {
        let l = &self.layout;
        for (band, f) in l.filters.iter().enumerate() {
            let keys = self.band_keys(band)?;
            let bytes = self.data().get(f.start..f.end).unwrap_or_default();
            let params = f
                .params
                .ok_or_else(|| self.err(f.start, "band filter header unreadable"))?;
            if let Some(&k) = keys
                .iter()
                .find(|&&k| !band_filter::may_contain(bytes, &params, k))
            {
                let (at, _) = band_filter::block_range(&params, k);
                return Err(self.err(
                    f.start + at,
                    format!("band {band} filter hides key {k:#010x} the band holds"),
                ));
            }
            if f.distinct != keys.len() as u64 {
                return Err(self.err(
                    f.start,
                    format!(
                        "band {band} filter counts {} keys, the band holds {}",
                        f.distinct,
                        keys.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The distinct key32 values of `band`'s postings and hot records, ascending.
    fn band_keys(&self, band: usize) -> Result<Vec<u32>> {
        let t = *self.band_table(band)?;
        let mut keys = Vec::new();
        self.for_each_entry(&t, |_, key, _| {
            if keys.last() != Some(&key) {
                keys.push(key);
            }
            Ok(())
        })?;
        for h in self.hot_buckets() {
            let h = h?;
            if h.band as usize == band {
                keys.push(h.key32);
            }
        }
        keys.sort_unstable();
        keys.dedup();
        Ok(keys)
    }
}

/// Which docnos a segment stores, for checking postings: a bitmap over the range when the
/// range is dense (the usual case), a binary search of the docnos otherwise. Each stored
/// document has a slot, for the "posted twice" bitmap.
struct StoredDocs<'a> {
    base: u64,
    /// The docno range, when it is dense.
    span: Option<u64>,
    /// One bit per docno of a dense range, set for the stored ones.
    present: Vec<u64>,
    docnos: &'a [u64],
}

impl<'a> StoredDocs<'a> {
    fn new(base: u64, span: u64, docnos: &'a [u64]) -> Self {
        let dense = span <= 64 * (docnos.len() as u64).max(1024);
        let present = if dense {
            let mut bits = vec![0u64; (span as usize).div_ceil(64)];
            for &d in docnos {
                mark(&mut bits, d - base);
            }
            bits
        } else {
            Vec::new()
        };
        StoredDocs {
            base,
            span: dense.then_some(span),
            present,
            docnos,
        }
    }

    /// Number of slots: one per docno of a dense range, else one per stored document.
    fn slots(&self) -> usize {
        self.span.unwrap_or(self.docnos.len() as u64) as usize
    }

    /// The slot of the stored document `base + rel`; `None` if no such document is stored.
    fn slot_of(&self, rel: u64) -> Option<u64> {
        if self.span.is_some() {
            let word = self.present.get((rel / 64) as usize)?;
            (word & (1 << (rel % 64)) != 0).then_some(rel)
        } else {
            let d = self.base.checked_add(rel)?;
            self.docnos.binary_search(&d).ok().map(|i| i as u64)
        }
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

/// The CRC-32 of `bytes`, asking for each 8 MiB piece's pages while the piece before it is
/// hashed: a mapped file is advised for random reads, and a section's checksum over a file
/// the page cache does not hold would otherwise fault it in one page at a time.
fn crc_reading_ahead(bytes: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    let mut pieces = bytes.chunks(super::blocks::READ_AHEAD_BYTES).peekable();
    if let Some(first) = pieces.peek() {
        let _ = crate::storage::read_ahead(first);
    }
    while let Some(piece) = pieces.next() {
        if let Some(next) = pieces.peek() {
            let _ = crate::storage::read_ahead(next);
        }
        hasher.update(piece);
    }
    hasher.finalize()
}
