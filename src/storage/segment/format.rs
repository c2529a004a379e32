//! The fixed parts of the byte layout of `format/segment.md`: magic numbers and version, the
//! header, section-table entry, footer and hot-record structs, the section kinds, and the two
//! hashes the format defines (the stored band-key bits and the key-index hash) plus the
//! metadata checksum. Everything here is shared by the encoder and the decoder.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use xxhash_rust::xxh3::xxh3_64;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// First 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"MHDBSEG\0";
/// Last 4 bytes of every segment file.
pub const SEGMENT_FOOTER_MAGIC: [u8; 4] = *b"MHSF";
/// The segment format version this build writes (it also reads [`SEGMENT_FORMAT_V1`]).
pub const SEGMENT_FORMAT_VERSION: u32 = 2;
/// The first segment format: no signatures (they were in the database's signature log) and
/// no block checksums. Still read, for version-1 databases opened read-only or upgraded.
pub const SEGMENT_FORMAT_V1: u32 = 1;
/// Version 2 checks the data area in blocks of this many bytes.
pub const BLOCK_LEN: usize = 4096;

pub(super) const HEADER_LEN: usize = 64;
pub(super) const FOOTER_LEN: usize = 32;
pub(super) const SECTION_ENTRY_LEN: usize = 40;
pub(super) const HOT_RECORD_LEN: usize = 16;

pub(super) const KIND_KEY_BLOB: u16 = 1;
pub(super) const KIND_DOC_TABLE: u16 = 2;
pub(super) const KIND_KEY_INDEX: u16 = 3;
pub(super) const KIND_BAND: u16 = 4;
pub(super) const KIND_HOT: u16 = 5;
pub(super) const KIND_SIGNATURES: u16 = 6;
/// Stored shingle sets (`format/segment.md`), in the segments of an index that stores them.
pub(super) const KIND_SHINGLES: u16 = 7;
pub(super) const KIND_CHECKSUMS: u16 = 8;

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub(super) struct Header {
    pub(super) magic: [u8; 8],
    pub(super) version: U32,
    pub(super) flags: U32,
    pub(super) num_bands: U32,
    pub(super) bucket_cap: U32,
    pub(super) base_docno: U64,
    pub(super) span: U64,
    pub(super) doc_count: U64,
    /// Version 2: bytes of one packed signature in the SIGNATURES section (0 = none stored).
    /// Version 1: zero (part of the reserved bytes).
    pub(super) record_bytes: U32,
    pub(super) reserved: [u8; 12],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub(super) struct SectionEntry {
    pub(super) kind: U16,
    pub(super) width_a: u8,
    pub(super) width_b: u8,
    pub(super) index: U32,
    pub(super) offset: U64,
    pub(super) len: U64,
    pub(super) count: U64,
    pub(super) crc32: U32,
    pub(super) reserved: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub(super) struct Footer {
    pub(super) section_table_offset: U64,
    pub(super) num_sections: U32,
    pub(super) reserved: U32,
    pub(super) file_len: U64,
    pub(super) meta_crc: U32,
    pub(super) magic: [u8; 4],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub(super) struct HotRecord {
    pub(super) band: U32,
    pub(super) key32: U32,
    pub(super) original_size: U64,
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
pub(super) fn key_hash32(key: &[u8]) -> u32 {
    (xxh3_64(key) >> 32) as u32
}

/// CRC-32 (IEEE) of header ‖ section table ‖ footer bytes 0..24.
pub(super) fn meta_crc(header: &[u8], section_table: &[u8], footer: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(section_table);
    h.update(footer.get(..24).unwrap_or_default());
    h.finalize()
}
