//! Checked reads (format versions 2 and 3): the data area of a segment (every section before
//! CHECKSUMS) is cut into 4 KiB blocks aligned with the file's pages (block j is file bytes
//! 4096·j .. 4096·(j + 1); block 0 starts after the header, of 64 bytes or version 3's 96),
//! each with a CRC-32 in the CHECKSUMS section. A read
//! uses a byte only after its block's CRC matched once; one bit per block remembers that, so
//! a warm read costs one atomic load and a test. A mismatch is corruption naming the block's
//! offset, returned to the caller: damage never becomes a wrong answer.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};

use super::bits::read_u32;
use super::format::{
    BLOCK_LEN, KIND_DOC_TABLE, KIND_EXACT_HASH, KIND_KEEP, KIND_KEY_BLOB, KIND_SET_SIZE,
    KIND_SHINGLES, KIND_SIGNATURES,
};
use super::reader::Segment;
use crate::Result;

/// A check of more blocks than this (1 MiB) reads ahead ([`Segment::read_ahead`]): a scan.
/// A lookup's bucket is at most its cap's entries, under 100 KB, so a query never pays for
/// the advice.
const READ_AHEAD_FROM: usize = 256;

/// Blocks a long check asks for at a time.
const READ_AHEAD_BLOCKS: usize = READ_AHEAD_BYTES / BLOCK_LEN;

/// Bytes a scan asks for at a time, ahead of what it reads.
pub(super) const READ_AHEAD_BYTES: usize = 8 << 20;

/// Rows a pass in row order ([`Segment::read_ahead_rows`]) asks for at a time.
const READ_AHEAD_ROWS: u64 = 1 << 15;

/// The sections laid out in row order: a pass over the rows reads each from start to end.
const ROW_ORDERED: [u16; 7] = [
    KIND_DOC_TABLE,
    KIND_KEY_BLOB,
    KIND_SIGNATURES,
    KIND_SHINGLES,
    KIND_EXACT_HASH,
    KIND_KEEP,
    KIND_SET_SIZE,
];

/// Where a segment's block checksums are and what they cover (versions 2 and 3).
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockChecks {
    /// First byte covered (the first section).
    pub(super) start: usize,
    /// End of the covered bytes (the CHECKSUMS section's offset).
    pub(super) end: usize,
    /// Offset of the CRC table: one u32 per block.
    pub(super) table: usize,
}

impl BlockChecks {
    fn blocks(&self) -> usize {
        self.end.div_ceil(BLOCK_LEN)
    }
}

/// The "checked" bit set for a segment: one bit per block, all clear.
pub(super) fn checked_bits(blocks: Option<&BlockChecks>) -> Box<[AtomicU64]> {
    let words = blocks.map_or(0, |b| b.blocks().div_ceil(64));
    (0..words).map(|_| AtomicU64::new(0)).collect()
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// Makes sure bytes `at .. at + len` are as written: checks each block they touch that has
    /// not been checked yet. Bytes outside the data area (the metadata, checked by `open`)
    /// and every byte of a version-1 segment (which has no block checksums) pass as they are.
    #[inline]
    pub(super) fn check(&self, at: usize, len: usize) -> Result<()> {
        let Some(c) = &self.layout.blocks else {
            return Ok(());
        };
        let stop = at.saturating_add(len).min(c.end);
        if len == 0 || at >= stop || stop <= c.start {
            return Ok(());
        }
        let first = at.max(c.start) / BLOCK_LEN;
        let last = (stop - 1) / BLOCK_LEN;
        // A long check asks for its pages a window ahead, checked before or not: its caller
        // reads them next (a scan), and pages checked in an earlier pass may have left the
        // cache since. A short one (a lookup's) does not.
        let long = last - first >= READ_AHEAD_FROM;
        for block in first..=last {
            if long && (block - first).is_multiple_of(READ_AHEAD_BLOCKS) {
                self.read_ahead(block, last);
            }
            let done = self
                .checked
                .get(block / 64)
                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (block % 64)) != 0);
            if !done {
                self.check_block(c, block)?;
            }
        }
        Ok(())
    }

    /// For a pass over the rows in order (compaction's copy of its inputs): at every
    /// [`READ_AHEAD_ROWS`]-th row, asks for the pages the next two windows of rows read in
    /// each row-ordered section, in proportion to the section's length. Each row's own
    /// checked read is a few bytes, too short to read ahead by itself.
    pub(super) fn read_ahead_rows(&self, row: u64) {
        let rows = self.layout.doc_count;
        if rows == 0 || !row.is_multiple_of(READ_AHEAD_ROWS) {
            return;
        }
        let data = self.data();
        for &(kind, start, end, _) in &self.layout.sections {
            if !ROW_ORDERED.contains(&kind) {
                continue;
            }
            let len = end.saturating_sub(start) as u128;
            let at = |r: u64| start + (len * u128::from(r.min(rows)) / u128::from(rows)) as usize;
            let (from, to) = (at(row), at(row + 2 * READ_AHEAD_ROWS));
            if let Some(bytes) = data.get(from..to.min(data.len())) {
                let _ = crate::storage::read_ahead(bytes);
            }
        }
    }

    /// Asks for the pages of blocks `block ..` (two windows' worth, to `last`) before a long
    /// check reads them: the window after the one being checked is on its way meanwhile.
    fn read_ahead(&self, block: usize, last: usize) {
        let end = (block + 2 * READ_AHEAD_BLOCKS).min(last + 1);
        let range = block * BLOCK_LEN..end * BLOCK_LEN;
        let data = self.data();
        if let Some(bytes) = data.get(range.start..range.end.min(data.len())) {
            let _ = crate::storage::read_ahead(bytes);
        }
    }

    /// Compares block `block`'s CRC with the table and remembers a match.
    #[cold]
    fn check_block(&self, c: &BlockChecks, block: usize) -> Result<()> {
        let from = (block * BLOCK_LEN).max(c.start);
        let to = ((block + 1) * BLOCK_LEN).min(c.end);
        let bytes = self
            .data()
            .get(from..to)
            .ok_or_else(|| self.err(from, "block out of bounds"))?;
        let stored = read_u32(self.data(), c.table + block * 4)
            .ok_or_else(|| self.err(c.table + block * 4, "block checksum out of bounds"))?;
        if crc32fast::hash(bytes) != stored {
            return Err(self.err(
                from,
                format!("block {block} (bytes {from}..{to}) fails its checksum"),
            ));
        }
        if let Some(w) = self.checked.get(block / 64) {
            w.fetch_or(1 << (block % 64), Ordering::Relaxed);
        }
        Ok(())
    }

    /// Checks every block (for `verify`, which reads everything anyway).
    pub(super) fn check_all_blocks(&self) -> Result<()> {
        if let Some(c) = self.layout.blocks {
            let last = c.blocks().saturating_sub(1);
            for block in 0..c.blocks() {
                if block.is_multiple_of(READ_AHEAD_BLOCKS) {
                    self.read_ahead(block, last);
                }
                self.check_block(&c, block)?;
            }
        }
        Ok(())
    }

    /// Blocks of this segment checked so far, and blocks in all (0 for version 1).
    pub fn blocks_checked(&self) -> (u64, u64) {
        let total = self.layout.blocks.map_or(0, |c| c.blocks()) as u64;
        let done = self
            .checked
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum();
        (done, total)
    }
}
