//! Opening a segment: [`Segment::open`] reads the header, footer and section table, checks
//! the metadata checksum and that every section's kind, offset, widths and size agree, and
//! keeps the resulting [`Layout`] so that later reads need no further checks of the metadata.
//! O(bands) work; the sections' contents are not read (see `verify.rs` for that).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use zerocopy::FromBytes;

use super::bits::{bits_below, bits_for};
use super::blocks::{BlockChecks, checked_bits};
use super::format::{
    BLOCK_LEN, FOOTER_LEN, Footer, HEADER_LEN, HOT_RECORD_LEN, Header, KIND_BAND, KIND_CHECKSUMS,
    KIND_DOC_TABLE, KIND_HOT, KIND_KEY_BLOB, KIND_KEY_INDEX, KIND_SHINGLES, KIND_SIGNATURES,
    SECTION_ENTRY_LEN, SEGMENT_FOOTER_MAGIC, SEGMENT_FORMAT_V1, SEGMENT_FORMAT_VERSION,
    SEGMENT_MAGIC, SectionEntry, meta_crc,
};
use super::prefix::{MAX_PREFIX_BITS, Table};
use super::reader::{Segment, corrupt};
use crate::{Error, Result};

/// Where a SHINGLES section's parts are (`format/segment.md`).
#[derive(Clone, Copy, Debug)]
pub(super) struct SetsSection {
    /// The offset table: `doc_count + 1` u64s, each relative to `data`.
    pub(super) offsets: usize,
    /// The coded sets, back to back.
    pub(super) data: usize,
    /// End of the section.
    pub(super) end: usize,
}

/// Byte ranges and parameters found by [`Segment::open`]; O(bands) in size.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    /// The file's format version: 1 or 2.
    pub(super) version: u32,
    /// Bytes of one stored signature (0: none stored, always so in version 1).
    pub(super) record_bytes: usize,
    /// Offset of the SIGNATURES section (version 2).
    pub(super) signatures: usize,
    /// The SHINGLES section, in segments of an index that stores shingle sets.
    pub(super) sets: Option<SetsSection>,
    /// Where the block checksums are and what they cover (version 2).
    pub(super) blocks: Option<BlockChecks>,
    pub(super) num_bands: u32,
    pub(super) bucket_cap: u32,
    pub(super) base: u64,
    pub(super) span: u64,
    pub(super) doc_count: u64,
    pub(super) blob: (usize, usize),
    pub(super) docs: usize,
    pub(super) docno_bits: u32,
    pub(super) end_bits: u32,
    pub(super) key_index: Table,
    pub(super) bands: Vec<Table>,
    pub(super) hot: (usize, u64),
    pub(super) sections: Vec<(u16, usize, usize, u32)>,
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// Validates the header, footer, section table and metadata checksum (O(bands) work, no
    /// per-document memory) and returns a view of the segment. `path` only names the file in
    /// errors.
    pub fn open(bytes: B, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let layout = Self::parse(bytes.as_ref(), &path)?;
        let checked = checked_bits(layout.blocks.as_ref());
        Ok(Segment {
            bytes,
            path,
            layout,
            checked,
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
        // The version is judged only once the metadata checksum, which covers it, matched:
        // a damaged version field is corruption, not a newer format.
        let version = header.version.get();
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
        if version != SEGMENT_FORMAT_VERSION && version != SEGMENT_FORMAT_V1 {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: SEGMENT_FORMAT_VERSION,
            });
        }

        // The metadata is intact as written; still check it is self-consistent, so that a
        // buggy or hostile writer cannot make the reader index out of bounds.
        let v2 = version == SEGMENT_FORMAT_VERSION;
        let record_bytes = header.record_bytes.get() as usize;
        if header.flags.get() != 0
            || header.reserved != [0; 12]
            || footer.reserved.get() != 0
            || (!v2 && record_bytes != 0)
        {
            return Err(bad(12, "unknown flags or non-zero reserved bytes".into()));
        }
        // Version 1: KEY_BLOB, DOC_TABLE, KEY_INDEX, b × BAND, HOT. Version 2 adds SIGNATURES
        // and CHECKSUMS after HOT, and SHINGLES between HOT and SIGNATURES in the segments
        // of an index that stores shingle sets.
        let num_bands = header.num_bands.get();
        let has_sets = v2 && (num_bands as usize).checked_add(7) == Some(nsec);
        let fixed = match (v2, has_sets) {
            (false, _) => 4,
            (true, false) => 6,
            (true, true) => 7,
        };
        if num_bands == 0 || (num_bands as usize).checked_add(fixed) != Some(nsec) {
            return Err(bad(16, format!("{num_bands} bands but {nsec} sections")));
        }
        let hot_index = 3 + num_bands as usize;
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
        let mut signatures = 0;
        let mut sets = None;
        let mut blocks = None;
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
                _ if i == hot_index => KIND_HOT,
                _ if i > hot_index && i + 1 == nsec => KIND_CHECKSUMS,
                _ if has_sets && i == hot_index + 1 => KIND_SHINGLES,
                _ if i > hot_index => KIND_SIGNATURES,
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
                KIND_HOT => {
                    hot = (expect_at, count);
                    a == 0 && b == 0 && count.checked_mul(HOT_RECORD_LEN as u64) == Some(slen)
                }
                KIND_SHINGLES => {
                    // An offset table of doc_count + 1 u64s, then the coded sets.
                    sets = Some(SetsSection {
                        offsets: expect_at,
                        data: expect_at.saturating_add((doc_count as usize + 1) * 8),
                        end,
                    });
                    a == 0
                        && b == 0
                        && count == doc_count
                        && (count + 1).checked_mul(8).is_some_and(|n| n <= slen)
                }
                KIND_SIGNATURES => {
                    signatures = expect_at;
                    a == 0
                        && b == 0
                        && count == doc_count
                        && count.checked_mul(record_bytes as u64) == Some(slen)
                }
                _ => {
                    // The checksums cover every byte from the first section to this one, in
                    // blocks aligned with the file's pages.
                    let want = expect_at.div_ceil(BLOCK_LEN) as u64;
                    let own = data.get(expect_at..end).unwrap_or_default();
                    if a == 0 && b == 0 && count == want && slen == want * 4 {
                        // Checked now (4 bytes per 4 KiB): every later block check trusts it.
                        if crc32fast::hash(own) != e.crc32.get() {
                            return Err(bad(expect_at, "block checksum table damaged".into()));
                        }
                        blocks = Some(BlockChecks {
                            start: HEADER_LEN,
                            end: expect_at,
                            table: expect_at,
                        });
                        true
                    } else {
                        false
                    }
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
            version,
            record_bytes,
            signatures,
            sets,
            blocks,
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
}
