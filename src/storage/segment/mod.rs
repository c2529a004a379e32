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
//! * Given a [`FileIdentity`](crate::storage::identity::FileIdentity), the builder and
//!   [`combine_segments_as`] write format version 3, whose header carries the database's
//!   identity and the file's number, and [`Segment::open_as`] checks them; without one they
//!   write and read version 2 (and version 1 is still read).
//! * [`combine_segments`] k-way merges segments with disjoint docno ranges, dropping dead
//!   documents and re-applying bucket caps, using only what the segments store.
//!
//! Band keys are truncated to their top 32 bits (`key32`). Two different band keys with the same
//! top 32 bits therefore share a bucket: a rare false candidate that the database removes by
//! verifying signatures. Buckets are capped deterministically: a bucket with more than `cap`
//! documents keeps the `cap` whose keys hash lowest ([`cap_rank`]; not the lowest docnos, so
//! that indexes built apart keep the same documents) and is recorded as hot together with its
//! original size.
//!
//! The decoder never panics on any input: every read is bounds-checked and every failure is an
//! [`Error::Corruption`](crate::Error::Corruption) naming the byte offset.
//!
//! One file per part: `format` (fixed structs and constants), `bits` (bit packing), `prefix`
//! (prefix tables), `band_filter` (per-band membership filters), `encode` (the shared
//! encoder), `columns` (the per-document columns), `exact` (the EXACT_HASH column),
//! `builder`, `combine`, `open` (metadata checks), `shape` (what the header says the file
//! holds), `blocks` (checked reads, versions 2 and 3), `reader`, `verify`, `stats` and
//! `prefetch`. Each file denies `unwrap`, `expect` and unchecked indexing.

mod band_filter;
#[cfg(test)]
mod band_filter_tests;
mod bits;
mod blocks;
mod builder;
mod checksums;
mod columns;
mod combine;
mod encode;
mod exact;
mod format;
mod keep;
mod open;
mod prefetch;
mod prefix;
mod reader;
mod shape;
mod stats;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod v3_tests;
mod verify;
mod write;

pub use builder::{SegmentBuilder, SegmentOptions, SegmentParts};
pub use columns::{ColumnSet, DocColumns};
pub(crate) use combine::combine_segments_write;
pub use combine::{combine_segments, combine_segments_as};
pub use encode::cap_rank;
pub(crate) use encode::keep_lowest_ranked;
pub use format::{
    BLOCK_LEN, SEGMENT_DOC_COUNT_OFFSET, SEGMENT_FOOTER_MAGIC, SEGMENT_FORMAT_V1,
    SEGMENT_FORMAT_V2, SEGMENT_FORMAT_V3, SEGMENT_FORMAT_VERSION, SEGMENT_MAGIC, band_key32,
};
pub use keep::{KeepColumn, KeepRank, KeepType, KeepValue, MAX_KEEP_STRING};
pub use reader::{HotBucket, Postings, Segment};
pub use stats::{BucketStats, SizeBreakdown};
pub(crate) use write::Sink;
