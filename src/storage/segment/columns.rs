//! The per-document columns of a version-3 segment (`format/segment.md`, section kinds 9
//! EXACT_HASH, 10 KEEP and 11 SET_SIZE): each a presence bitmap of ⌈doc_count / 64⌉ LE u64 words, then
//! doc_count fixed-width rows, zeros for a row without a value. One encoder, one row reader
//! and one check for every column, so that a column adds only its width and its value type.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::format::{
    FLAG_EXACT_HASH, FLAG_KEEP, FLAG_SET_SIZE, KIND_EXACT_HASH, KIND_KEEP, KIND_SET_SIZE,
};
use super::keep::{KeepBuilder, KeepType, KeepValue};
use super::reader::Segment;
use crate::Result;

/// Bytes of one stored exact hash (a LE u128).
pub(super) const EXACT_LEN: usize = 16;
/// Bytes of one stored set size (a LE u32).
pub(super) const SET_SIZE_LEN: usize = 4;

/// Which optional per-document columns an index (and so each of its segments and WAL
/// inserts) has: the manifest's features EXACT_HASH, KEEP (with its type) and SET_SIZE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColumnSet {
    /// The EXACT_HASH column (`format/hashing.md` §17).
    pub exact: bool,
    /// The KEEP column, with the type of its values.
    pub keep: Option<KeepType>,
    /// The SET_SIZE column: the number of distinct shingle hashes of each document.
    pub set_size: bool,
}

impl ColumnSet {
    /// True when the set has any column.
    pub fn any(self) -> bool {
        self.exact || self.keep.is_some() || self.set_size
    }
}

/// One document's values of the optional columns, each absent when the document has none
/// (inserted by signature, or carried over by an upgrade).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocColumns {
    /// Its exact hash (never 0 when present).
    pub exact: Option<u128>,
    /// Its keep value (of the index's keep type).
    pub keep: Option<KeepValue>,
    /// The number of distinct shingle hashes of its set.
    pub set_size: Option<u32>,
}

impl DocColumns {
    /// These values with those of a column `columns` lacks removed.
    pub fn within(self, columns: ColumnSet) -> Self {
        DocColumns {
            exact: self.exact.filter(|_| columns.exact),
            keep: self.keep.filter(|v| Some(v.keep_type()) == columns.keep),
            set_size: self.set_size.filter(|_| columns.set_size),
        }
    }
}

/// The section's length for `doc_count` rows of `width` bytes.
pub(super) fn section_len(doc_count: u64, width: usize) -> Option<u64> {
    doc_count
        .div_ceil(64)
        .checked_mul(8)?
        .checked_add(doc_count.checked_mul(width as u64)?)
}

/// One column's section being built, a row at a time in ordinal order.
#[derive(Clone, Debug)]
struct PresenceColumn {
    width: usize,
    presence: Vec<u64>,
    values: Vec<u8>,
    rows: usize,
}

impl PresenceColumn {
    fn new(width: usize) -> Self {
        PresenceColumn {
            width,
            presence: Vec::new(),
            values: Vec::new(),
            rows: 0,
        }
    }

    /// Appends the next row: its value's bytes (`width` of them), or none.
    fn push(&mut self, value: Option<&[u8]>) {
        if self.rows.is_multiple_of(64) {
            self.presence.push(0);
        }
        match (value, self.presence.last_mut()) {
            (Some(v), Some(word)) => {
                *word |= 1 << (self.rows % 64);
                self.values.extend_from_slice(v);
            }
            _ => self.values.resize(self.values.len() + self.width, 0),
        }
        self.rows += 1;
    }

    fn section(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.presence.len() * 8 + self.values.len());
        for w in &self.presence {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.values);
        out
    }
}

/// A column section ready to write: its kind, its header flag and its bytes.
#[derive(Clone, Debug)]
pub(super) struct ColumnSection {
    pub(super) kind: u16,
    pub(super) flag: u32,
    /// The section entry's `width_a` (the keep type for KEEP, else 0).
    pub(super) width_a: u32,
    pub(super) bytes: Vec<u8>,
}

/// The column sections of a segment being built (or combined), a row at a time.
#[derive(Clone, Debug, Default)]
pub(super) struct ColumnsBuilder {
    exact: Option<PresenceColumn>,
    keep: Option<KeepBuilder>,
    set_size: Option<PresenceColumn>,
}

impl ColumnsBuilder {
    pub(super) fn new(columns: ColumnSet) -> Self {
        ColumnsBuilder {
            exact: columns.exact.then(|| PresenceColumn::new(EXACT_LEN)),
            keep: columns.keep.map(KeepBuilder::new),
            set_size: columns.set_size.then(|| PresenceColumn::new(SET_SIZE_LEN)),
        }
    }

    /// The columns this builder has.
    pub(super) fn set(&self) -> ColumnSet {
        ColumnSet {
            exact: self.exact.is_some(),
            keep: self.keep.as_ref().map(KeepBuilder::keep_type),
            set_size: self.set_size.is_some(),
        }
    }

    /// Rows pushed so far (0 without columns).
    pub(super) fn rows(&self) -> usize {
        self.exact
            .as_ref()
            .or(self.set_size.as_ref())
            .map(|c| c.rows)
            .or(self.keep.as_ref().map(KeepBuilder::rows))
            .unwrap_or(0)
    }

    /// Appends the next row's values (those of a column it lacks are ignored).
    pub(super) fn push(&mut self, values: &DocColumns) {
        if let Some(c) = &mut self.exact {
            c.push(
                values
                    .exact
                    .map(|h| h.max(1).to_le_bytes())
                    .as_ref()
                    .map(|b| &b[..]),
            );
        }
        if let Some(c) = &mut self.keep {
            c.push(values.keep.as_ref());
        }
        if let Some(c) = &mut self.set_size {
            c.push(
                values
                    .set_size
                    .map(u32::to_le_bytes)
                    .as_ref()
                    .map(|b| &b[..]),
            );
        }
    }

    /// The sections, in the order the file holds them.
    pub(super) fn sections(&self) -> Vec<ColumnSection> {
        let section = |kind, flag, c: &Option<PresenceColumn>| {
            c.as_ref().map(|c| ColumnSection {
                kind,
                flag,
                width_a: 0,
                bytes: c.section(),
            })
        };
        let keep = self.keep.as_ref().map(|c| ColumnSection {
            kind: KIND_KEEP,
            flag: FLAG_KEEP,
            width_a: u32::from(c.keep_type().code()),
            bytes: c.section(),
        });
        [
            section(KIND_EXACT_HASH, FLAG_EXACT_HASH, &self.exact),
            keep,
            section(KIND_SET_SIZE, FLAG_SET_SIZE, &self.set_size),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

impl<B: AsRef<[u8]>> Segment<B> {
    /// The columns this segment has.
    pub fn columns(&self) -> ColumnSet {
        ColumnSet {
            exact: self.layout.exact.is_some(),
            keep: self.layout.keep.map(|k| k.keep_type),
            set_size: self.layout.set_size.is_some(),
        }
    }

    /// Every column value of the document at ordinal (row) `i`, checked.
    pub fn columns_at(&self, i: u64) -> Result<DocColumns> {
        Ok(DocColumns {
            exact: self.exact_hash_at(i)?,
            keep: self.keep_value_at(i)?,
            set_size: self.set_size_at(i)?,
        })
    }

    /// The column values of `docno`: all absent when the segment does not hold it.
    pub fn columns_of(&self, docno: u64) -> Result<DocColumns> {
        match self.ordinal_of(docno)? {
            Some(i) => self.columns_at(i),
            None => Ok(DocColumns::default()),
        }
    }

    /// The set size of document `docno`, checked: `None` for a document without one, one
    /// this segment does not hold, or a segment without the column.
    pub fn set_size_of(&self, docno: u64) -> Result<Option<u32>> {
        match self.ordinal_of(docno)? {
            Some(i) => self.set_size_at(i),
            None => Ok(None),
        }
    }

    /// The set size of the document at ordinal (row) `i`, checked: `None` for a row without
    /// one, or a segment without the column.
    pub fn set_size_at(&self, i: u64) -> Result<Option<u32>> {
        let Some(start) = self.layout.set_size else {
            return Ok(None);
        };
        Ok(self
            .column_row::<SET_SIZE_LEN>(start, i, "set size")?
            .map(u32::from_le_bytes))
    }

    /// Row `i` of the column section at `start` of `W`-byte rows, its bytes checked against
    /// their block checksums: `None` for a row without a value. A row without a value whose
    /// bytes are not zero is corruption.
    pub(super) fn column_row<const W: usize>(
        &self,
        start: usize,
        i: u64,
        what: &str,
    ) -> Result<Option<[u8; W]>> {
        let doc_count = self.layout.doc_count;
        if i >= doc_count {
            return Err(crate::Error::invalid(
                "row",
                format!("{i} is past the {doc_count} documents"),
            ));
        }
        let word_at = start + (i / 64) as usize * 8;
        let value_at = start + doc_count.div_ceil(64) as usize * 8 + i as usize * W;
        self.check(word_at, 8)?;
        self.check(value_at, W)?;
        let word = self
            .data()
            .get(word_at..word_at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| self.err(word_at, format!("{what} presence out of bounds")))?;
        let value = self
            .data()
            .get(value_at..value_at + W)
            .and_then(|b| <[u8; W]>::try_from(b).ok())
            .ok_or_else(|| self.err(value_at, format!("{what} out of bounds")))?;
        match (word >> (i % 64)) & 1 == 1 {
            true => Ok(Some(value)),
            false if value != [0; W] => Err(self.err(
                value_at,
                format!("row {i} has no {what} but non-zero bytes"),
            )),
            false => Ok(None),
        }
    }

    /// Every row of every column checked as [`Segment::columns_at`] reads it, and no
    /// presence bit set past the last row.
    pub(super) fn verify_columns(&self) -> Result<()> {
        let doc_count = self.layout.doc_count;
        for i in 0..doc_count {
            self.columns_at(i)?;
        }
        self.verify_keep_end()?;
        let keep = self.layout.keep.map(|k| k.start);
        let starts = [self.layout.exact, keep, self.layout.set_size];
        for start in starts.into_iter().flatten() {
            if doc_count.is_multiple_of(64) {
                continue;
            }
            let last_at = start + (doc_count / 64) as usize * 8;
            let last = self
                .data()
                .get(last_at..last_at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_le_bytes)
                .unwrap_or(0);
            if last >> (doc_count % 64) != 0 {
                return Err(self.err(last_at, "a presence bit set past the last row"));
            }
        }
        Ok(())
    }
}
