//! Opening a segment: [`Segment::open`] reads the header, footer and section table, checks
//! the metadata checksum and that every section's kind, offset, widths and size agree, and
//! keeps the resulting [`Layout`] so that later reads need no further checks of the metadata.
//! A version-3 file's identity is checked against the one the caller expects, and its flags
//! and section kinds that this build reserves are refused as unsupported.
//! O(bands) work; the sections' contents are not read (see `verify.rs` for that).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use zerocopy::FromBytes;

use super::band_filter::{self, FilterParams, KIND_BLOCKED_BLOOM};
use super::bits::{bits_below, bits_for};
use super::blocks::{BlockChecks, checked_bits};
use super::format::{
    BLOCK_LEN, DB_ID_OFFSET, FILE_ID_OFFSET, FOOTER_LEN, Footer, HEADER_LEN, HEADER_V3_LEN,
    HOT_RECORD_LEN, Header, IDENTITY_TAIL_OFFSET, IdentityTail, KIND_BAND, KIND_BAND_FILTER,
    KIND_DOC_TABLE, KIND_EXACT_HASH, KIND_HOT, KIND_KEEP, KIND_KEY_BLOB, KIND_KEY_INDEX,
    KIND_SET_SIZE, KIND_SHINGLES, KIND_SIGNATURES, RESERVED_KINDS, SECTION_ENTRY_LEN,
    SEGMENT_FOOTER_MAGIC, SEGMENT_FORMAT_V1, SEGMENT_FORMAT_V3, SEGMENT_MAGIC, SectionEntry,
    meta_crc,
};
use super::prefix::{MAX_PREFIX_BITS, Table};
use super::reader::{Segment, corrupt};
use super::shape::Shape;
use crate::storage::identity::{DbId, FileIdentity, IdentityOffsets, check_file_identity};
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

/// Where a BAND_FILTER section is, and the parameters its header gives.
#[derive(Clone, Copy, Debug)]
pub(super) struct FilterSection {
    pub(super) start: usize,
    pub(super) end: usize,
    /// The distinct keys the section's entry says the filter holds (checked by `verify`).
    pub(super) distinct: u64,
    /// Read from the section's header at open ([`Segment::open_as`]); `None` when that
    /// header's block fails its checksum (then every read of the band reports the damage, as
    /// reads of any damaged block do, and the rest of the file stays readable).
    pub(super) params: Option<FilterParams>,
}

/// Byte ranges and parameters found by [`Segment::open`]; O(bands) in size.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    /// The file's format version: 1, 2 or 3.
    pub(super) version: u32,
    /// The identity a version-3 file carries (`None` in versions 1 and 2).
    pub(super) identity: Option<FileIdentity>,
    /// The footer's metadata checksum: the root of the chain of checksums over every byte.
    pub(super) meta_crc: u32,
    /// Bytes of one stored signature (0: none stored, always so in version 1).
    pub(super) record_bytes: usize,
    /// Offset of the SIGNATURES section (version 2).
    pub(super) signatures: usize,
    /// The SHINGLES section, in segments of an index that stores shingle sets.
    pub(super) sets: Option<SetsSection>,
    /// Where the EXACT_HASH section starts, in segments of an index with that column.
    pub(super) exact: Option<usize>,
    /// The KEEP section, in segments of an index with that column.
    pub(super) keep: Option<super::keep::KeepSection>,
    /// Where the SET_SIZE section starts, in segments of an index with that column.
    pub(super) set_size: Option<usize>,
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
    /// One filter per band, in band order; empty in a segment without filters.
    pub(super) filters: Vec<FilterSection>,
    pub(super) hot: (usize, u64),
    pub(super) sections: Vec<(u16, usize, usize, u32)>,
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// Validates the header, footer, section table and metadata checksum (O(bands) work, no
    /// per-document memory) and returns a view of the segment. `path` only names the file in
    /// errors. The file must carry no identity (versions 1 and 2, as a database of version 2
    /// or older holds): see [`Segment::open_as`].
    pub fn open(bytes: B, path: impl Into<PathBuf>) -> Result<Self> {
        Self::open_as(bytes, path, None)
    }

    /// [`Segment::open`] for a file that must carry `expected`: the database's identity and
    /// the number of the file's name (a version-3 segment), or, with `None`, no identity (a
    /// segment of version 1 or 2). Anything else is corruption naming the field that differs:
    /// the version (offset 8), `db_id` (56) or `file_id` (72).
    pub fn open_as(
        bytes: B,
        path: impl Into<PathBuf>,
        expected: Option<FileIdentity>,
    ) -> Result<Self> {
        let path = path.into();
        let layout = Self::parse(bytes.as_ref(), &path, expected)?;
        let checked = checked_bits(layout.blocks.as_ref());
        let mut seg = Segment {
            bytes,
            path,
            layout,
            checked,
        };
        seg.read_filter_headers()?;
        Ok(seg)
    }

    /// Reads each band filter's header and checks it against the section's length. A header
    /// that does not agree is corruption at the section's offset when its block matches its
    /// checksum (a writer's error); when the block fails it, the damage is the block's, left
    /// to the reads of that band to report (each lookup checks the header's block), so that
    /// a damaged block never keeps the rest of the file from being read or verified.
    fn read_filter_headers(&mut self) -> Result<()> {
        let mut filters = std::mem::take(&mut self.layout.filters);
        for f in &mut filters {
            let bytes = self.data().get(f.start..f.end).unwrap_or_default();
            match band_filter::read_params(bytes) {
                Ok(params) => f.params = Some(params),
                Err(e) if self.check(f.start, band_filter::HEADER_BYTES).is_ok() => {
                    return Err(self.err(f.start, format!("band filter: {e}")));
                }
                Err(_) => f.params = None,
            }
        }
        self.layout.filters = filters;
        Ok(())
    }

    /// Reads and checks the metadata in file order: header and footer, where the section
    /// table is, the metadata checksum and version, the identity, the header's fields, then
    /// every section.
    fn parse(data: &[u8], path: &Path, expected: Option<FileIdentity>) -> Result<Layout> {
        let meta = Metadata::read(data, path)?;
        let identity = meta.identity(data);
        check_file_identity(
            path,
            "segment",
            identity,
            expected,
            IdentityOffsets {
                version: 8,
                db_id: DB_ID_OFFSET as u64,
                file_id: FILE_ID_OFFSET as u64,
            },
        )?;
        // The metadata is intact as written; still check it is self-consistent, so that a
        // buggy or hostile writer cannot make the reader index out of bounds.
        let shape = Shape::of(data, &meta, path)?;
        let found = read_sections(data, path, &shape, meta.table.at)?;
        let key_index = found
            .key_index
            .ok_or_else(|| corrupt(path, meta.table.at as u64, "no key index"))?;
        Ok(Layout {
            version: shape.version,
            identity,
            meta_crc: meta.footer.meta_crc.get(),
            record_bytes: shape.record_bytes,
            signatures: found.signatures,
            sets: found.sets,
            exact: found.exact,
            keep: found.keep,
            set_size: found.set_size,
            blocks: found.blocks,
            num_bands: shape.num_bands,
            bucket_cap: meta.header.bucket_cap.get(),
            base: shape.base,
            span: shape.span,
            doc_count: shape.doc_count,
            blob: found.blob,
            docs: found.docs,
            docno_bits: shape.docno_bits,
            end_bits: found.end_bits,
            key_index,
            bands: found.bands,
            filters: found.filters,
            hot: found.hot,
            sections: found.sections,
        })
    }
}

/// The header, footer and section table's place, once the metadata checksum matched and the
/// version is one this build reads.
pub(super) struct Metadata<'a> {
    pub(super) header: &'a Header,
    pub(super) footer: &'a Footer,
    pub(super) table: TableSpan,
    /// 64, or 96 in version 3.
    pub(super) header_len: usize,
}

impl<'a> Metadata<'a> {
    fn read(data: &'a [u8], path: &Path) -> Result<Self> {
        let (header, footer) = read_frame(data, path)?;
        // Trusted only once the checksum matched: a damaged version field makes the checksum
        // cover the wrong number of header bytes, and so fail.
        let header_len = if header.version.get() == SEGMENT_FORMAT_V3 {
            HEADER_V3_LEN
        } else {
            HEADER_LEN
        };
        if data.len() < header_len + FOOTER_LEN {
            return Err(bad(
                path,
                data.len(),
                format!("file is {} bytes, shorter than header + footer", data.len()),
            ));
        }
        let table = TableSpan::of(footer, data.len(), header_len, path)?;
        check_meta_crc(data, header_len, &table, footer, path)?;
        // The version is judged only once the metadata checksum, which covers it, matched:
        // a damaged version field is corruption, not a newer format.
        let version = header.version.get();
        if !(SEGMENT_FORMAT_V1..=SEGMENT_FORMAT_V3).contains(&version) {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: SEGMENT_FORMAT_V3,
            });
        }
        Ok(Metadata {
            header,
            footer,
            table,
            header_len,
        })
    }

    /// Version 3's header bytes 52..96 (`None` in versions 1 and 2).
    pub(super) fn tail(&self, data: &'a [u8]) -> Option<&'a IdentityTail> {
        if self.header_len != HEADER_V3_LEN {
            return None;
        }
        let bytes = data.get(IDENTITY_TAIL_OFFSET..HEADER_V3_LEN)?;
        IdentityTail::ref_from_bytes(bytes).ok()
    }

    /// The identity a version-3 file carries.
    fn identity(&self, data: &[u8]) -> Option<FileIdentity> {
        self.tail(data).map(|t| FileIdentity {
            db_id: DbId(t.db_id),
            file_id: t.file_id.get(),
        })
    }
}

/// A corruption error at `offset` of `path`.
pub(super) fn bad(path: &Path, offset: usize, detail: impl Into<String>) -> Error {
    corrupt(path, offset as u64, detail)
}

/// The header and footer, each with its magic, and the file length the footer records.
fn read_frame<'a>(data: &'a [u8], path: &Path) -> Result<(&'a Header, &'a Footer)> {
    let len = data.len();
    if len < HEADER_LEN + FOOTER_LEN {
        return Err(bad(
            path,
            len,
            format!("file is {len} bytes, shorter than header + footer"),
        ));
    }
    let (header, _) =
        Header::ref_from_prefix(data).map_err(|_| bad(path, 0, "cannot read header"))?;
    if header.magic != SEGMENT_MAGIC {
        return Err(bad(path, 0, "bad magic: not an mhdb segment"));
    }
    let footer_at = len - FOOTER_LEN;
    let footer = data
        .get(footer_at..)
        .and_then(|f| Footer::ref_from_bytes(f).ok())
        .ok_or_else(|| bad(path, footer_at, "cannot read footer"))?;
    if footer.magic != SEGMENT_FOOTER_MAGIC {
        return Err(bad(
            path,
            len - 4,
            "bad footer magic (truncated or torn file?)",
        ));
    }
    if footer.file_len.get() != len as u64 {
        return Err(bad(
            path,
            footer_at + 16,
            format!(
                "footer records {} bytes, file has {len}",
                footer.file_len.get()
            ),
        ));
    }
    Ok((header, footer))
}

/// Where the section table is: `nsec` entries from `at`, ending at the footer (`footer_at`).
pub(super) struct TableSpan {
    at: usize,
    pub(super) nsec: usize,
    pub(super) footer_at: usize,
}

impl TableSpan {
    /// The footer's section table, checked to lie between the header (`header_len` bytes)
    /// and the footer and to end exactly at the footer.
    fn of(footer: &Footer, len: usize, header_len: usize, path: &Path) -> Result<Self> {
        let footer_at = len - FOOTER_LEN;
        let nsec = footer.num_sections.get() as usize;
        let table_at = footer.section_table_offset.get();
        let table_len = nsec
            .checked_mul(SECTION_ENTRY_LEN)
            .ok_or_else(|| bad(path, footer_at + 8, "section count overflows"))?;
        if usize::try_from(table_at)
            .ok()
            .and_then(|t| t.checked_add(table_len))
            != Some(footer_at)
            || table_at < header_len as u64
        {
            return Err(bad(
                path,
                footer_at,
                format!(
                    "section table at {table_at} with {nsec} sections does not end at the footer"
                ),
            ));
        }
        Ok(TableSpan {
            at: table_at as usize,
            nsec,
            footer_at,
        })
    }
}

/// Checks the metadata checksum over the header, the section table and the footer.
fn check_meta_crc(
    data: &[u8],
    header_len: usize,
    table: &TableSpan,
    footer: &Footer,
    path: &Path,
) -> Result<()> {
    let header_bytes = data.get(..header_len).unwrap_or_default();
    let table_bytes = data.get(table.at..table.footer_at).unwrap_or_default();
    let footer_bytes = data.get(table.footer_at..).unwrap_or_default();
    if meta_crc(header_bytes, table_bytes, footer_bytes) != footer.meta_crc.get() {
        return Err(bad(
            path,
            table.footer_at + 24,
            "metadata checksum mismatch (header, section table or footer damaged)",
        ));
    }
    Ok(())
}

/// One section-table entry, placed: its fields and the byte range it covers.
struct Entry {
    /// Offset of the entry in the section table.
    at: usize,
    kind: u16,
    a: u32,
    b: u32,
    /// The section's bytes: `start..end`, `len` long.
    start: usize,
    end: usize,
    len: u64,
    count: u64,
    crc: u32,
}

/// What the sections say, gathered as the table is walked.
#[derive(Default)]
struct Found {
    sections: Vec<(u16, usize, usize, u32)>,
    blob: (usize, usize),
    docs: usize,
    end_bits: u32,
    key_index: Option<Table>,
    bands: Vec<Table>,
    filters: Vec<FilterSection>,
    hot: (usize, u64),
    signatures: usize,
    sets: Option<SetsSection>,
    exact: Option<usize>,
    keep: Option<super::keep::KeepSection>,
    set_size: Option<usize>,
    blocks: Option<BlockChecks>,
}

/// Walks the section table: each section of the kind its place requires, starting where the
/// previous one ended, and consistent in size; the last one ending at the table.
fn read_sections(data: &[u8], path: &Path, shape: &Shape, table_at: usize) -> Result<Found> {
    let mut found = Found {
        sections: Vec::with_capacity(shape.nsec),
        bands: Vec::with_capacity(shape.num_bands as usize),
        ..Found::default()
    };
    let mut expect_at = shape.header_len;
    for i in 0..shape.nsec {
        let e = place_entry(data, path, shape, table_at, i, expect_at)?;
        if !found.take(&e, data, shape, path)? {
            return Err(bad(
                path,
                e.at,
                format!("section {i} (kind {}) has inconsistent sizes", e.kind),
            ));
        }
        found.sections.push((e.kind, e.start, e.end, e.crc));
        expect_at = e.end;
    }
    if expect_at != table_at {
        return Err(bad(
            path,
            expect_at,
            "bytes between the last section and the table",
        ));
    }
    Ok(found)
}

/// Reads the `i`-th section entry and checks its kind, that it starts at `expect_at` and
/// that it ends before the table.
fn place_entry(
    data: &[u8],
    path: &Path,
    shape: &Shape,
    table_at: usize,
    i: usize,
    expect_at: usize,
) -> Result<Entry> {
    let at = table_at + i * SECTION_ENTRY_LEN;
    let e = data
        .get(at..)
        .and_then(|s| SectionEntry::ref_from_prefix(s).ok())
        .map(|(e, _)| e)
        .ok_or_else(|| bad(path, at, "cannot read section entry"))?;
    let (kind, off, len) = (e.kind.get(), e.offset.get(), e.len.get());
    let (want_kind, want_index) = shape.expected_kind(i);
    if kind != want_kind && shape.version == SEGMENT_FORMAT_V3 {
        refuse_reserved_kind(kind, path)?;
    }
    if kind != want_kind || e.index.get() != want_index || e.reserved.get() != 0 {
        return Err(bad(
            path,
            at,
            format!("section {i}: unexpected kind {kind} or index"),
        ));
    }
    if off != expect_at as u64 {
        return Err(bad(
            path,
            at + 8,
            format!("section {i} at {off}, expected {expect_at}"),
        ));
    }
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| expect_at.checked_add(l))
        .filter(|&end| end <= table_at)
        .ok_or_else(|| {
            bad(
                path,
                at + 16,
                format!("section {i} length {len} out of range"),
            )
        })?;
    Ok(Entry {
        at,
        kind,
        a: u32::from(e.width_a),
        b: u32::from(e.width_b),
        start: expect_at,
        end,
        len,
        count: e.count.get(),
        crc: e.crc32.get(),
    })
}

/// A section kind version 3 reserves for later work is refused as unsupported (checked after
/// the metadata checksum, which covers the section table).
fn refuse_reserved_kind(kind: u16, path: &Path) -> Result<()> {
    match RESERVED_KINDS.iter().find(|(k, _)| *k == kind) {
        Some((_, feature)) => Err(Error::Unsupported {
            path: path.to_path_buf(),
            feature: (*feature).to_string(),
        }),
        None => Ok(()),
    }
}

impl Found {
    /// Records section `e` and says whether its widths, count and length agree with its kind
    /// and with what came before (an error for a damaged checksum table).
    fn take(&mut self, e: &Entry, data: &[u8], shape: &Shape, path: &Path) -> Result<bool> {
        let plain = e.a == 0 && e.b == 0;
        Ok(match e.kind {
            KIND_KEY_BLOB => {
                self.blob = (e.start, e.end);
                plain && e.count == e.len
            }
            KIND_DOC_TABLE => self.take_doc_table(e, shape),
            KIND_KEY_INDEX => {
                self.key_index = prefix_table(e)
                    .filter(|_| e.b == bits_below(shape.doc_count) && e.count == shape.doc_count);
                self.key_index.is_some()
            }
            KIND_BAND => match prefix_table(e).filter(|_| e.b == shape.docno_bits) {
                Some(t) => {
                    self.bands.push(t);
                    true
                }
                None => false,
            },
            KIND_HOT => {
                self.hot = (e.start, e.count);
                plain && e.count.checked_mul(HOT_RECORD_LEN as u64) == Some(e.len)
            }
            KIND_SHINGLES => self.take_shingles(e, shape),
            KIND_EXACT_HASH => {
                self.exact = Some(e.start);
                plain && column_len_ok(e, shape, super::columns::EXACT_LEN)
            }
            KIND_KEEP => {
                self.keep = u8::try_from(e.a)
                    .ok()
                    .and_then(super::keep::KeepType::from_code)
                    .map(|keep_type| super::keep::KeepSection {
                        start: e.start,
                        end: e.end,
                        keep_type,
                    });
                e.b == 0
                    && e.count == shape.doc_count
                    && super::keep::keep_len_ok(e.a, shape.doc_count, e.len)
            }
            KIND_SET_SIZE => {
                self.set_size = Some(e.start);
                plain && column_len_ok(e, shape, super::columns::SET_SIZE_LEN)
            }
            KIND_BAND_FILTER => self.take_filter(e, path)?,
            KIND_SIGNATURES => {
                self.signatures = e.start;
                plain
                    && e.count == shape.doc_count
                    && e.count.checked_mul(shape.record_bytes as u64) == Some(e.len)
            }
            _ => self.take_checksums(e, data, shape, path)?,
        })
    }

    /// DOC_TABLE: a docno and a key end per document, as wide as the range and the key blob
    /// require.
    fn take_doc_table(&mut self, e: &Entry, shape: &Shape) -> bool {
        self.docs = e.start;
        self.end_bits = e.b;
        e.a == shape.docno_bits
            && e.b <= 64
            && e.b == bits_for(self.blob.1 as u64 - self.blob.0 as u64)
            && e.count == shape.doc_count
            && (e.count * u64::from(e.a + e.b)).div_ceil(8) == e.len
    }

    /// BAND_FILTER: a blocked Bloom filter (any other filter kind is refused as unsupported),
    /// a 16-byte header then whole 64-byte blocks. The header itself is read once the
    /// segment's block checks are set up ([`Segment::open_as`]).
    fn take_filter(&mut self, e: &Entry, path: &Path) -> Result<bool> {
        if e.a != KIND_BLOCKED_BLOOM {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                feature: format!("band filter kind {} (section at offset {})", e.a, e.start),
            });
        }
        self.filters.push(FilterSection {
            start: e.start,
            end: e.end,
            distinct: e.count,
            params: None,
        });
        let body = e.len.checked_sub(band_filter::HEADER_BYTES as u64);
        Ok(e.b == 0 && body.is_some_and(|b| b > 0 && b % band_filter::BLOCK_BYTES as u64 == 0))
    }

    /// SHINGLES: an offset table of `doc_count + 1` u64s, then the coded sets.
    fn take_shingles(&mut self, e: &Entry, shape: &Shape) -> bool {
        self.sets = Some(SetsSection {
            offsets: e.start,
            data: e.start.saturating_add((shape.doc_count as usize + 1) * 8),
            end: e.end,
        });
        e.a == 0
            && e.b == 0
            && e.count == shape.doc_count
            && (e.count + 1).checked_mul(8).is_some_and(|n| n <= e.len)
    }

    /// CHECKSUMS: one CRC per block of every byte from the first section to this one, in
    /// blocks aligned with the file's pages. The table's own CRC is checked now (4 bytes per
    /// 4 KiB): every later block check trusts it.
    fn take_checksums(
        &mut self,
        e: &Entry,
        data: &[u8],
        shape: &Shape,
        path: &Path,
    ) -> Result<bool> {
        let want = e.start.div_ceil(BLOCK_LEN) as u64;
        if !(e.a == 0 && e.b == 0 && e.count == want && e.len == want * 4) {
            return Ok(false);
        }
        let own = data.get(e.start..e.end).unwrap_or_default();
        if crc32fast::hash(own) != e.crc {
            return Err(bad(path, e.start, "block checksum table damaged"));
        }
        self.blocks = Some(BlockChecks {
            start: shape.header_len,
            end: e.start,
            table: e.start,
        });
        Ok(true)
    }
}

/// Whether a column section of `width`-byte rows has a row per document and the length they
/// and the presence bitmap make.
fn column_len_ok(e: &Entry, shape: &Shape, width: usize) -> bool {
    e.count == shape.doc_count && super::columns::section_len(shape.doc_count, width) == Some(e.len)
}

/// The prefix table (key index or band) that entry `e` describes, if its widths are in range
/// and its length is what they and its count make.
fn prefix_table(e: &Entry) -> Option<Table> {
    if e.a > MAX_PREFIX_BITS || e.b > 64 || e.count > u64::from(u32::MAX) {
        return None;
    }
    let t = Table {
        offset: e.start,
        entries: e.start + ((1usize << e.a) + 1) * 4,
        count: e.count,
        prefix_bits: e.a,
        value_bits: e.b,
    };
    let need = ((1u64 << e.a) + 1) * 4 + (e.count * t.width()).div_ceil(8);
    (need == e.len).then_some(t)
}
