//! The exact hashes of a database's live documents (`format/hashing.md` §17): what `stats`
//! counts, read from the segments' EXACT_HASH columns and the in-memory tables, and the
//! lookup that skips exact copies at ingest (`mhdb add --exact-dedup`).

use std::collections::{HashMap, HashSet};

use super::Db;
use super::state::State;
use crate::sketch::Signature;
use crate::{Error, Result};

/// How many live documents have an exact hash and how many lack one (inserted by signature,
/// or carried over by an upgrade), in an index with the EXACT_HASH column.
pub type ExactHashCounts = super::columns::ColumnCounts;

impl Db {
    /// How many live documents have an exact hash and how many do not; `None` for an index
    /// without the EXACT_HASH column. Reads every live document's row (16 bytes each).
    pub fn exact_hash_counts(&self) -> Result<Option<ExactHashCounts>> {
        let [exact, _, _] = self.column_counts()?;
        Ok(exact)
    }

    /// The exact hash of the live document `key`: `None` when the key is absent, the document
    /// has none, or the index has no EXACT_HASH column.
    pub fn exact_hash_of(&self, key: impl AsRef<[u8]>) -> Result<Option<u128>> {
        Ok(self.columns_of(key)?.exact)
    }

    /// Whether this index has the EXACT_HASH column (manifest feature): documents inserted
    /// as text or tokens carry their exact hashes.
    pub fn has_exact_hashes(&self) -> bool {
        self.columns.exact
    }
}

/// Documents as keys with their signatures, in input order.
pub type KeyedSignatures = Vec<(Vec<u8>, Signature)>;

/// Every stored document's exact hash, by hash: the document numbers that had it when stored,
/// for every document numbered below `covered`. Built on a writer's first lookup and brought
/// up to date before each one from the documents numbered since (inserts of every path,
/// bulk ones included, take the next numbers). A deleted or replaced document stays listed:
/// a lookup checks that a listed document is still live and still has the hash, so deletes
/// and upserts need no upkeep. About 60 bytes per document (a 16-byte hash, an 8-byte number
/// and the map's and list's overhead).
#[derive(Debug, Default)]
pub(super) struct ExactSeen {
    by_hash: HashMap<u128, Vec<u64>>,
    covered: u64,
}

impl ExactSeen {
    /// Lists the documents of `state` numbered from `covered` on.
    fn catch_up(&mut self, state: &State) -> Result<()> {
        let covered = self.covered;
        for seg in &state.version.segments {
            if seg.seg.end_docno() <= covered {
                continue;
            }
            for (row, doc) in seg.seg.docs().enumerate() {
                let (docno, _) = doc?;
                if docno >= covered
                    && let Some(h) = seg.seg.exact_hash_at(row as u64)?
                {
                    self.by_hash.entry(h).or_default().push(docno);
                }
            }
        }
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            for (docno, doc) in table.docs() {
                if docno >= covered
                    && let Some(h) = doc.columns.exact
                {
                    self.by_hash.entry(h).or_default().push(docno);
                }
            }
        }
        self.covered = state.mem.next_docno();
        Ok(())
    }

    /// Whether a live document of `state` has the exact hash `h`.
    fn has_live(&self, state: &State, h: u128) -> Result<bool> {
        for &docno in self.by_hash.get(&h).map_or(&[][..], Vec::as_slice) {
            if !state.is_deleted(docno) && live_hash(state, docno)? == Some(h) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The exact hash document `docno` of `state` has, if it is stored (and has one).
fn live_hash(state: &State, docno: u64) -> Result<Option<u128>> {
    for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
        if let Some(doc) = table.doc(docno) {
            return Ok(doc.columns.exact.filter(|_| doc.live));
        }
    }
    match state.version.segment_of(docno) {
        Some(seg) => seg.seg.exact_hash_of(docno),
        None => Ok(None),
    }
}

impl Db {
    /// Splits `docs` into those to store and the number of exact copies left out: a document
    /// whose exact hash (attached when the index signed its text or tokens) equals that of a
    /// live stored document, or of an earlier document of `docs`. A document without a hash
    /// (given by signature) is kept. An upsert whose new text is an exact copy of a live
    /// document (itself included) is left out too: the stored copy stays. Refused on an index
    /// without the EXACT_HASH column.
    pub fn drop_exact_copies(&self, docs: KeyedSignatures) -> Result<(KeyedSignatures, u64)> {
        if !self.columns.exact {
            return Err(Error::invalid(
                "exact_dedup",
                format!(
                    "{} has no exact hashes (created with --no-exact-hash, a SimHash index, or \
                     one of signatures made elsewhere): exact copies cannot be told apart",
                    self.dir.display()
                ),
            ));
        }
        let state = self.state.read();
        let mut seen = self.exact_seen.lock();
        seen.catch_up(&state)?;
        let mut in_docs = HashSet::new();
        let mut kept = Vec::with_capacity(docs.len());
        let mut copies = 0;
        for (key, sig) in docs {
            let copy = match sig.exact_hash() {
                Some(h) => !in_docs.insert(h) || seen.has_live(&state, h)?,
                None => false,
            };
            if copy {
                copies += 1;
            } else {
                kept.push((key, sig));
            }
        }
        Ok((kept, copies))
    }
}
