//! The EXACT_HASH column of a version-3 segment (`format/segment.md`, section kind 9): a
//! presence bitmap of ⌈doc_count / 64⌉ LE u64 words, then doc_count × 16 bytes, each row's
//! exact hash as a LE u128 (`format/hashing.md` §17), zeros for a row without one.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::reader::Segment;
use crate::Result;

/// Bytes of one stored exact hash.
pub(super) const EXACT_LEN: usize = 16;

/// The section's length for `doc_count` rows.
pub(super) fn section_len(doc_count: u64) -> Option<u64> {
    doc_count
        .div_ceil(64)
        .checked_mul(8)?
        .checked_add(doc_count.checked_mul(EXACT_LEN as u64)?)
}

/// An EXACT_HASH section being built, a row at a time in ordinal order.
#[derive(Clone, Debug, Default)]
pub(super) struct ExactColumn {
    presence: Vec<u64>,
    values: Vec<u8>,
    rows: usize,
}

impl ExactColumn {
    /// Appends the next row: its hash, or none.
    pub(super) fn push(&mut self, hash: Option<u128>) {
        if self.rows.is_multiple_of(64) {
            self.presence.push(0);
        }
        if let (Some(h), Some(word)) = (hash, self.presence.last_mut()) {
            *word |= 1 << (self.rows % 64);
            self.values.extend_from_slice(&h.max(1).to_le_bytes());
        } else {
            self.values.extend_from_slice(&[0; EXACT_LEN]);
        }
        self.rows += 1;
    }

    /// Rows pushed so far.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// The section's bytes.
    pub(super) fn section(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.presence.len() * 8 + self.values.len());
        for w in &self.presence {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.values);
        out
    }
}

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
        let doc_count = self.layout.doc_count;
        if i >= doc_count {
            return Err(crate::Error::invalid(
                "row",
                format!("{i} is past the {doc_count} documents"),
            ));
        }
        let word_at = start + (i / 64) as usize * 8;
        let value_at = start + doc_count.div_ceil(64) as usize * 8 + i as usize * EXACT_LEN;
        self.check(word_at, 8)?;
        self.check(value_at, EXACT_LEN)?;
        let word = self
            .data()
            .get(word_at..word_at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| self.err(word_at, "exact hash presence out of bounds"))?;
        let value = self
            .data()
            .get(value_at..value_at + EXACT_LEN)
            .and_then(|b| <[u8; EXACT_LEN]>::try_from(b).ok())
            .map(u128::from_le_bytes)
            .ok_or_else(|| self.err(value_at, "exact hash out of bounds"))?;
        match (word >> (i % 64)) & 1 == 1 {
            true if value == 0 => Err(self.err(value_at, format!("row {i}: an exact hash of 0"))),
            true => Ok(Some(value)),
            false if value != 0 => Err(self.err(
                value_at,
                format!("row {i} has no exact hash but non-zero bytes"),
            )),
            false => Ok(None),
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

    /// Every row checked as [`Segment::exact_hash_at`] reads it, and no presence bit set past
    /// the last row.
    pub(super) fn verify_exact_hashes(&self) -> Result<()> {
        let Some(start) = self.layout.exact else {
            return Ok(());
        };
        let doc_count = self.layout.doc_count;
        for i in 0..doc_count {
            self.exact_hash_at(i)?;
        }
        if !doc_count.is_multiple_of(64) {
            let last_at = start + (doc_count / 64) as usize * 8;
            let last = self
                .data()
                .get(last_at..last_at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0);
            if last >> (doc_count % 64) != 0 {
                return Err(self.err(last_at, "exact hash presence bit set past the last row"));
            }
        }
        Ok(())
    }
}
