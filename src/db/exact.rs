//! The exact hashes of a database's live documents (`format/hashing.md` §17): what `stats`
//! counts, read from the segments' EXACT_HASH columns and the in-memory tables.

use super::Db;
use super::state::State;
use crate::Result;

/// How many live documents have an exact hash and how many lack one (inserted by signature,
/// or carried over by an upgrade), in an index with the EXACT_HASH column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactHashCounts {
    /// Live documents with an exact hash.
    pub with: u64,
    /// Live documents without one.
    pub without: u64,
}

/// Calls `f(docno, hash)` for every live document of `state`, in docno order per segment and
/// then the in-memory tables: its exact hash, or `None`. Segment rows are read checked
/// against their block checksums, so damage is an error, not a wrong count.
pub(super) fn for_each_live_exact_hash(
    state: &State,
    mut f: impl FnMut(u64, Option<u128>),
) -> Result<()> {
    for seg in &state.version.segments {
        for (row, doc) in seg.seg.docs().enumerate() {
            let (docno, _) = doc?;
            if !state.is_deleted(docno) {
                f(docno, seg.seg.exact_hash_at(row as u64)?);
            }
        }
    }
    for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
        for (docno, doc) in table.live_docs() {
            if !state.is_deleted(docno) {
                f(docno, doc.exact);
            }
        }
    }
    Ok(())
}

impl Db {
    /// How many live documents have an exact hash and how many do not; `None` for an index
    /// without the EXACT_HASH column. Reads every live document's row (16 bytes each).
    pub fn exact_hash_counts(&self) -> Result<Option<ExactHashCounts>> {
        if !self.exact_column {
            return Ok(None);
        }
        let state = self.state.read().snapshot();
        let mut counts = ExactHashCounts::default();
        for_each_live_exact_hash(&state, |_, h| match h {
            Some(_) => counts.with += 1,
            None => counts.without += 1,
        })?;
        Ok(Some(counts))
    }

    /// The exact hash of the live document `key`: `None` when the key is absent, the document
    /// has none, or the index has no EXACT_HASH column.
    pub fn exact_hash_of(&self, key: impl AsRef<[u8]>) -> Result<Option<u128>> {
        let state = self.state.read();
        let Some(docno) = state.lookup_key(key.as_ref())? else {
            return Ok(None);
        };
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            if let Some(doc) = table.doc(docno) {
                return Ok(doc.exact);
            }
        }
        match state.version.segment_of(docno) {
            Some(seg) => seg.seg.exact_hash_of(docno),
            None => Ok(None),
        }
    }

    /// Whether this index has the EXACT_HASH column (manifest feature): documents inserted
    /// as text or tokens carry their exact hashes.
    pub fn has_exact_hashes(&self) -> bool {
        self.exact_column
    }
}
