//! The EXACT_HASH column of a version-3 segment (`format/segment.md`, section kind 9): a
//! presence bitmap, then doc_count × 16 bytes, each row's exact hash as a LE u128
//! (`format/hashing.md` §17), zeros for a row without one (the layout every column shares:
//! [`super::columns`]).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::columns::EXACT_LEN;
use super::reader::Segment;
use crate::Result;

impl<B: AsRef<[u8]>> Segment<B> {
    /// True when the segment has the EXACT_HASH column.
    pub fn stores_exact_hashes(&self) -> bool {
        self.layout.exact.is_some()
    }

    /// The exact hash of the document at ordinal (row) `i`, its bytes checked against their
    /// block checksums: `None` for a row without one, or a segment without the column. A row
    /// without a hash whose bytes are not zero, or one with a hash of zero, is corruption.
    pub fn exact_hash_at(&self, i: u64) -> Result<Option<u128>> {
        let Some(start) = self.layout.exact else {
            return Ok(None);
        };
        match self.column_row::<EXACT_LEN>(start, i, "exact hash")? {
            Some(bytes) if u128::from_le_bytes(bytes) == 0 => {
                let value_at = start
                    + self.layout.doc_count.div_ceil(64) as usize * 8
                    + i as usize * EXACT_LEN;
                Err(self.err(value_at, format!("row {i}: an exact hash of 0")))
            }
            row => Ok(row.map(u128::from_le_bytes)),
        }
    }

    /// The exact hash of `docno`: `None` when the segment does not hold it, has no column,
    /// or the row has no hash.
    pub fn exact_hash_of(&self, docno: u64) -> Result<Option<u128>> {
        if self.layout.exact.is_none() {
            return Ok(None);
        }
        match self.ordinal_of(docno)? {
            Some(i) => self.exact_hash_at(i),
            None => Ok(None),
        }
    }
}
