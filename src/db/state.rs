//! What reads see, behind one reader-writer lock: the mutable in-memory table, the frozen one a
//! flush is writing, and the committed [`Version`]. Everything that decides whether a
//! document is live lives here, so that queries, dedup, stats and export agree.

use std::sync::Arc;

use super::memtable::MemTable;
use super::version::Version;
use crate::Result;

/// Mutable in-memory state, behind one reader-writer lock.
pub(super) struct State {
    pub(super) mem: MemTable,
    pub(super) imm: Option<Arc<MemTable>>,
    pub(super) version: Arc<Version>,
}

impl State {
    /// A copy that long reads (dedup) can use without holding the lock: the files are shared
    /// (immutable, reference-counted), the mutable in-memory table is copied (at most
    /// `Options::memtable_bytes`).
    pub(super) fn snapshot(&self) -> State {
        State {
            mem: self.mem.clone(),
            imm: self.imm.clone(),
            version: self.version.clone(),
        }
    }

    /// Whether any committed document (below the in-memory tables' range) is deleted: when
    /// none is, [`State::is_deleted`] is false for all of them, and a query's walk over its
    /// segment candidates skips the question.
    pub(super) fn deletes_committed(&self) -> bool {
        !self.mem.deleted_older.is_empty()
            || self
                .imm
                .as_ref()
                .is_some_and(|imm| !imm.deleted_older.is_empty())
            || self.version.deletions.len() > 0
    }

    /// True if `docno` is deleted (or was never a live document).
    pub(super) fn is_deleted(&self, docno: u64) -> bool {
        if docno >= self.mem.base {
            return !self.mem.doc(docno).is_some_and(|d| d.live);
        }
        if self.mem.deleted_older.contains(&docno) {
            return true;
        }
        if let Some(imm) = &self.imm {
            if docno >= imm.base {
                return !imm.doc(docno).is_some_and(|d| d.live);
            }
            if imm.deleted_older.contains(&docno) {
                return true;
            }
        }
        self.version.deletions.contains(docno)
    }

    /// `candidates` (ascending) split into those in segments, which a query reads segment by
    /// segment, and the rest: the in-memory tables', or all of a version-1 database's (whose
    /// signatures are in its log, read one by one).
    pub(super) fn split_committed<'c>(&self, candidates: &'c [u64]) -> (&'c [u64], &'c [u64]) {
        let memory_base = self.imm.as_ref().map_or(self.mem.base, |imm| imm.base);
        let committed = if self.version.siglog.is_some() {
            0
        } else {
            candidates.partition_point(|&d| d < memory_base)
        };
        candidates.split_at(committed)
    }

    /// The live document number of `key`, if any.
    pub(super) fn lookup_key(&self, key: &[u8]) -> Result<Option<u64>> {
        if let Some(d) = self.mem.lookup_key(key) {
            return Ok(Some(d));
        }
        if let Some(d) = self.imm.as_ref().and_then(|imm| imm.lookup_key(key))
            && !self.mem.deleted_older.contains(&d)
        {
            return Ok(Some(d));
        }
        for seg in self.version.segments.iter().rev() {
            if let Some(d) = seg.seg.find_key(key)?
                && !self.is_deleted(d)
            {
                return Ok(Some(d));
            }
        }
        Ok(None)
    }

    /// The packed signature of `docno`: from memory, or a checked read of the segment that
    /// stores it (an error if its bytes are damaged, never a wrong signature).
    pub(super) fn signature_bytes(&self, docno: u64, record_bytes: usize) -> Result<Option<&[u8]>> {
        if let Some(d) = self.mem.doc(docno) {
            return Ok(Some(d.sig));
        }
        if let Some(d) = self.imm.as_ref().and_then(|imm| imm.doc(docno)) {
            return Ok(Some(d.sig));
        }
        self.version.signature(docno, record_bytes)
    }

    /// The coded shingle set of `docno` (an index that stores sets): from memory, or a checked
    /// read of the segment that stores it; `None` when no table holds the document.
    pub(super) fn set_bytes(&self, docno: u64) -> Result<Option<&[u8]>> {
        if let Some(set) = self.mem.set_of(docno) {
            return Ok(Some(set));
        }
        if let Some(set) = self.imm.as_ref().and_then(|imm| imm.set_of(docno)) {
            return Ok(Some(set));
        }
        match self.version.segment_of(docno) {
            Some(seg) => seg.seg.set_of(docno),
            None => Ok(None),
        }
    }

    /// The set size of `docno` (SET_SIZE column): `None` when it has none, or no table holds
    /// it.
    pub(super) fn set_size_of(&self, docno: u64) -> Result<Option<u32>> {
        if let Some(d) = self.mem.doc(docno) {
            return Ok(d.columns.set_size);
        }
        if let Some(d) = self.imm.as_ref().and_then(|imm| imm.doc(docno)) {
            return Ok(d.columns.set_size);
        }
        match self.version.segment_of(docno) {
            Some(seg) => seg.seg.set_size_of(docno),
            None => Ok(None),
        }
    }

    /// The size classes of the documents in every table, as bits
    /// ([`class_bit`](crate::sketch::containment::class_bit)): a class without a bit holds no
    /// document, and a containment query need not probe it.
    pub(super) fn size_classes(&self) -> Result<u128> {
        let mut classes = self.mem.size_classes;
        if let Some(imm) = &self.imm {
            classes |= imm.size_classes;
        }
        for seg in &self.version.segments {
            classes |= seg.size_classes()?;
        }
        Ok(classes)
    }

    /// The key of `docno`.
    pub(super) fn key_of(&self, docno: u64) -> Result<Option<&[u8]>> {
        if let Some(d) = self.mem.doc(docno) {
            return Ok(Some(d.key));
        }
        if let Some(d) = self.imm.as_ref().and_then(|imm| imm.doc(docno)) {
            return Ok(Some(d.key));
        }
        match self.version.segment_of(docno) {
            Some(seg) => seg.seg.key_of(docno),
            None => Ok(None),
        }
    }
    /// The number of live documents, counted from the deletion lists rather than document by
    /// document: segments' documents less the durable deletions that fall in them, less the
    /// deletions still in memory that fall in them, plus the in-memory tables' live documents.
    /// Documents stored, live or deleted: the rows of every segment and of the in-memory
    /// tables (compaction drops deleted rows; numbering never goes back).
    pub(super) fn stored_count(&self) -> u64 {
        let seg_docs: u64 = self
            .version
            .segments
            .iter()
            .map(|s| s.seg.doc_count())
            .sum();
        seg_docs + self.imm.as_ref().map_or(0, |i| i.len() as u64) + self.mem.len() as u64
    }

    pub(super) fn live_count(&self) -> u64 {
        let version = &self.version;
        let seg_docs: u64 = version.segments.iter().map(|s| s.seg.doc_count()).sum();
        let deleted_in_segments = version
            .deletions
            .iter()
            .filter(|&d| version.segment_of(d).is_some())
            .count() as u64;
        let mut live = seg_docs - deleted_in_segments;
        let memory_base = self.imm.as_ref().map_or(self.mem.base, |i| i.base);
        for d in self
            .mem
            .deleted_older
            .iter()
            .chain(self.imm.iter().flat_map(|i| i.deleted_older.iter()))
        {
            if *d < memory_base
                && version.segment_of(*d).is_some()
                && !version.deletions.contains(*d)
            {
                live = live.saturating_sub(1);
            }
        }
        if let Some(imm) = &self.imm {
            live += imm
                .live_docs()
                .filter(|(d, _)| !self.mem.deleted_older.contains(d))
                .count() as u64;
        }
        live + self.mem.live_count() as u64
    }
}
