//! Full verification of a segment against `format/segment.md`: every section checksum, then
//! every structural invariant (order, ranges, caps, the key index against the keys). Opening
//! checks only the metadata; combining checks the inputs' checksums, and the database's
//! verify runs the full check.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

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

        // Shingle sets: offsets in order, the last one at the section's end, every set
        // decoding to sorted distinct values.
        if let Some(sets) = l.sets {
            let mut scratch = Vec::new();
            for i in 0..l.doc_count {
                let coded = self.set_at(i)?;
                if let Err(e) = decode_into(coded, &mut scratch) {
                    let at = coded.as_ptr() as usize - self.data().as_ptr() as usize;
                    return Err(self.err(at + e.offset, format!("document {i}: {e}")));
                }
            }
            let last = sets.offsets + l.doc_count as usize * 8;
            let end = self
                .data()
                .get(last..last + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes);
            let first = self
                .data()
                .get(sets.offsets..sets.offsets + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes);
            if first != Some(0) || end != Some((sets.end - sets.data) as u64) {
                return Err(self.err(sets.offsets, "shingle sets do not cover their section"));
            }
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
