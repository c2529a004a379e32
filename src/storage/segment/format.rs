//! The fixed parts of the byte layout of `format/segment.md`: magic numbers and versions, the
//! header (version 3's with its identity), section-table entry, footer and hot-record structs,
//! the section kinds and header flags, and the two hashes the format defines (the stored
//! band-key bits and the key-index hash) plus the metadata checksum. Everything here is shared
//! by the encoder and the decoder.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use xxhash_rust::xxh3::xxh3_64;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// First 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"MHDBSEG\0";
/// Last 4 bytes of every segment file.
pub const SEGMENT_FOOTER_MAGIC: [u8; 4] = *b"MHSF";
/// The segment format version a database of format version 2 writes: a segment built without a
/// [`FileIdentity`](crate::storage::identity::FileIdentity).
pub const SEGMENT_FORMAT_VERSION: u32 = SEGMENT_FORMAT_V2;
/// The first segment format: no signatures (they were in the database's signature log) and
/// no block checksums. Still read, for version-1 databases opened read-only or upgraded.
pub const SEGMENT_FORMAT_V1: u32 = 1;
/// Signatures and block checksums, no identity: the segments of a version-2 database.
pub const SEGMENT_FORMAT_V2: u32 = 2;
/// A 96-byte header carrying the database's identity and the file's number, and flag bits for
/// the optional sections: a segment built with a
/// [`FileIdentity`](crate::storage::identity::FileIdentity). The newest version this build reads.
pub const SEGMENT_FORMAT_V3: u32 = 3;
/// Where every version keeps the header's `doc_count`, for an error that names the field.
pub const SEGMENT_DOC_COUNT_OFFSET: u64 = 40;
/// Versions 2 and 3 check the data area in blocks of this many bytes.
pub const BLOCK_LEN: usize = 4096;

/// Header length of versions 1 and 2; their data area starts here.
pub(super) const HEADER_LEN: usize = 64;
/// Header length of version 3; its data area starts here.
pub(super) const HEADER_V3_LEN: usize = 96;
/// Where version 3 keeps the database identity and the file number.
pub(super) const DB_ID_OFFSET: usize = 56;
pub(super) const FILE_ID_OFFSET: usize = 72;
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
/// Per-document exact hashes (`format/segment.md`), in the segments of an index with the
/// EXACT_HASH column.
pub(super) const KIND_EXACT_HASH: u16 = 9;
/// Per-document keep values (`format/segment.md`), in the segments of an index with the KEEP
/// column; the entry's `width_a` is the keep type.
pub(super) const KIND_KEEP: u16 = 10;
/// Per-document set sizes (`format/segment.md`), in the segments of an index with the
/// SET_SIZE column.
pub(super) const KIND_SET_SIZE: u16 = 11;
/// One membership filter per band (`format/segment.md`), in the segments of an index with
/// the BAND_FILTERS feature.
pub(super) const KIND_BAND_FILTER: u16 = 12;
/// Section kinds version 3 reserves for work to come (`format/segment.md`), each with the
/// feature it stands for: a file holding one is refused as unsupported, never misread.
pub(super) const RESERVED_KINDS: [(u16, &str); 0] = [];

/// Version 3 header flag: the segment has a SHINGLES section.
pub(super) const FLAG_SHINGLES: u32 = 1;
/// Version 3 header flag: the segment has an EXACT_HASH section.
pub(super) const FLAG_EXACT_HASH: u32 = 1 << 1;
/// Version 3 header flag: the segment has a KEEP section.
pub(super) const FLAG_KEEP: u32 = 1 << 2;
/// Version 3 header flag: the segment has a SET_SIZE section.
pub(super) const FLAG_SET_SIZE: u32 = 1 << 3;
/// Version 3 header flag: the segment has a BAND_FILTER section per band.
pub(super) const FLAG_BAND_FILTER: u32 = 1 << 4;
/// Version 3 header flags reserved for the optional sections to come, with the feature each
/// stands for; any other unknown bit is refused too.
pub(super) const RESERVED_FLAGS: [(u32, &str); 0] = [];

/// The header of versions 1 and 2. Version 3's first 52 bytes are the same fields; its
/// `reserved` bytes are where [`IdentityTail`] begins.
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

/// Version 3's header bytes 52..96, after the fields it shares with version 2.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy)]
#[repr(C)]
pub(super) struct IdentityTail {
    pub(super) reserved: [u8; 4],
    /// The database's identity (offset 56).
    pub(super) db_id: [u8; 16],
    /// The `<id>` of the file's name (offset 72).
    pub(super) file_id: U64,
    pub(super) reserved_end: [u8; 16],
}

/// Where [`IdentityTail`] starts: the end of the fields every version shares.
pub(super) const IDENTITY_TAIL_OFFSET: usize = 52;

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
const _: () = assert!(IDENTITY_TAIL_OFFSET + size_of::<IdentityTail>() == HEADER_V3_LEN);
const _: () =
    assert!(IDENTITY_TAIL_OFFSET + 4 == DB_ID_OFFSET && DB_ID_OFFSET + 16 == FILE_ID_OFFSET);
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

/// CRC-32 (IEEE) of header ‖ section table ‖ footer bytes 0..24 (the whole header: 64 bytes in
/// versions 1 and 2, 96 in version 3).
pub(super) fn meta_crc(header: &[u8], section_table: &[u8], footer: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(section_table);
    h.update(footer.get(..24).unwrap_or_default());
    h.finalize()
}
