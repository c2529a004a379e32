//! The optional per-document columns of a database (EXACT_HASH, SET_SIZE): which ones an
//! index has (its manifest features), and the values of its live documents, read from the
//! segments' column sections and the in-memory tables. `stats` counts them; the keep
//! policies of `dedup` rank by them.

use super::Db;
use super::state::State;
use crate::Result;
use crate::storage::manifest::Features;
use crate::storage::segment::{ColumnSet, DocColumns};

/// The columns an index with `features` has.
pub(super) fn column_set(features: Features) -> ColumnSet {
    ColumnSet {
        exact: features.contains(Features::EXACT_HASH),
        set_size: features.contains(Features::SET_SIZE),
    }
}

/// `features` with exactly the column bits of `columns`.
pub(super) fn with_columns(features: Features, columns: ColumnSet) -> Features {
    features
        .with(Features::EXACT_HASH, columns.exact)
        .with(Features::SET_SIZE, columns.set_size)
}

/// Calls `f(docno, values)` for every live document of `state`, in docno order per segment
/// and then the in-memory tables. Segment rows are read checked against their block
/// checksums, so damage is an error, not a wrong answer.
pub(super) fn for_each_live_columns(
    state: &State,
    mut f: impl FnMut(u64, DocColumns),
) -> Result<()> {
    for seg in &state.version.segments {
        for (row, doc) in seg.seg.docs().enumerate() {
            let (docno, _) = doc?;
            if !state.is_deleted(docno) {
                f(docno, seg.seg.columns_at(row as u64)?);
            }
        }
    }
    for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
        for (docno, doc) in table.live_docs() {
            if !state.is_deleted(docno) {
                f(docno, doc.columns);
            }
        }
    }
    Ok(())
}

/// How many live documents have a value in one column and how many lack one (inserted by
/// signature, or carried over by an upgrade).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColumnCounts {
    /// Live documents with a value.
    pub with: u64,
    /// Live documents without one.
    pub without: u64,
}

impl ColumnCounts {
    fn count(&mut self, present: bool) {
        match present {
            true => self.with += 1,
            false => self.without += 1,
        }
    }
}

impl Db {
    /// The per-document columns this index has (manifest features).
    pub fn columns(&self) -> ColumnSet {
        self.columns
    }

    /// Per column, how many live documents have a value and how many do not: `None` for a
    /// column the index lacks. Reads every live document's rows once.
    pub(super) fn column_counts(&self) -> Result<(Option<ColumnCounts>, Option<ColumnCounts>)> {
        if !self.columns.any() {
            return Ok((None, None));
        }
        let state = self.state.read().snapshot();
        let (mut exact, mut set_size) = (ColumnCounts::default(), ColumnCounts::default());
        for_each_live_columns(&state, |_, v| {
            exact.count(v.exact.is_some());
            set_size.count(v.set_size.is_some());
        })?;
        Ok((
            Some(exact).filter(|_| self.columns.exact),
            Some(set_size).filter(|_| self.columns.set_size),
        ))
    }

    /// The column values of the live document `key`: all absent when the key is absent.
    pub fn columns_of(&self, key: impl AsRef<[u8]>) -> Result<DocColumns> {
        let state = self.state.read();
        let Some(docno) = state.lookup_key(key.as_ref())? else {
            return Ok(DocColumns::default());
        };
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            if let Some(doc) = table.doc(docno) {
                return Ok(doc.columns);
            }
        }
        match state.version.segment_of(docno) {
            Some(seg) => seg.seg.columns_of(docno),
            None => Ok(DocColumns::default()),
        }
    }

    /// The set size of the live document `key`: `None` when the key is absent, the document
    /// has none, or the index has no SET_SIZE column.
    pub fn set_size_of(&self, key: impl AsRef<[u8]>) -> Result<Option<u32>> {
        Ok(self.columns_of(key)?.set_size)
    }

    /// Whether this index has the SET_SIZE column (manifest feature): documents inserted as
    /// text or tokens carry the number of their distinct shingle hashes.
    pub fn has_set_sizes(&self) -> bool {
        self.columns.set_size
    }
}
