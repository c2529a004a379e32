//! Compaction: runs of adjacent segments chosen by the [`CompactionPolicy`] are rewritten as
//! one, dropping documents whose deletion is durable, and published by a new manifest
//! (`format/commit.md`, "Compaction"). The live documents' signatures move with them into the
//! new segment (a deleted document's bytes are reclaimed), after every input block passed its
//! checksum.

use std::sync::Arc;

use super::Db;
use super::commit::{write_manifest, write_new_file_with};
use super::compaction_policy::CompactionPolicy;
use super::version::{LoadedSegment, Manifest, Version, load_segment};
use crate::storage::manifest::SegmentMeta;
use crate::storage::names;
use crate::storage::segment::combine_segments_write;
use crate::storage::vfs::OpenMode;
use crate::{Error, Result};

impl Db {
    /// Merges segments until the merge policy is satisfied.
    pub fn compact(&self) -> Result<()> {
        self.flush()?;
        loop {
            if !self.compact_step()? {
                return Ok(());
            }
        }
    }

    /// Merges every segment into one, dropping deleted documents (e.g. before shipping).
    pub fn compact_full(&self) -> Result<()> {
        self.flush()?;
        let _maint = self.maintenance.lock();
        let version = self.state.read().version.clone();
        let n = version.segments.len();
        if n == 0 || (n == 1 && version.deletions.len() == 0) {
            return Ok(());
        }
        match self.rewrite_range(&version, 0, n) {
            Ok(()) => {}
            Err(e) => return self.fail(e),
        }
        drop(_maint);
        self.remove_obsolete_files();
        Ok(())
    }

    /// One merge chosen by the policy; returns whether one happened.
    pub(super) fn compact_step(&self) -> Result<bool> {
        self.check_writable()?;
        let maint = self.maintenance.try_lock();
        let Some(_maint) = maint else {
            return Ok(false);
        };
        let version = self.state.read().version.clone();
        let deleted_in = |s: &SegmentMeta| {
            version
                .deletions
                .iter()
                .filter(|d| *d >= s.base && *d < s.base + s.span)
                .count() as u64
        };
        let policy = CompactionPolicy {
            factor: self.opts.merge_factor,
        };
        let Some((from, to)) = policy.pick(&version.manifest.segments, deleted_in) else {
            return Ok(false);
        };
        if let Err(e) = self.rewrite_range(&version, from, to) {
            return self.fail(e);
        }
        drop(_maint);
        self.remove_obsolete_files();
        Ok(true)
    }

    fn rewrite_range(&self, version: &Version, from: usize, to: usize) -> Result<()> {
        let inputs: Vec<&LoadedSegment> = version.segments[from..to]
            .iter()
            .map(|s| s.as_ref())
            .collect();
        let (Some(first), Some(last)) = (inputs.first(), inputs.last()) else {
            return Ok(());
        };
        let base = first.meta.base;
        let end = last.meta.base + last.meta.span;
        // Only durable deletions drop documents: a delete still in the WAL could be lost in a
        // crash, and must not take effect before it is acknowledged.
        let is_live = |docno: u64| !version.deletions.contains(docno);
        // The signatures of live documents move with them into the new segment; the inputs'
        // block and section checksums are checked first (`combine_segments`), so that damage
        // never gets a fresh checksum here.
        let segs: Vec<_> = inputs.iter().map(|s| &s.seg).collect();
        // Numbered before it is encoded: the number is in its header.
        let id = self.new_file_id();
        let identity = self.db_id.file(id);
        let path = self.dir.join(names::segment_name(id));
        let opts = self.segment_options();
        // The signatures, most of the file, go from the inputs' mappings to the file a piece
        // at a time.
        let written = write_new_file_with(self.vfs.as_ref(), &path, OpenMode::CreateNew, |sink| {
            combine_segments_write(&segs, is_live, &opts, identity, sink)
        })?;
        let meta = SegmentMeta {
            id,
            base,
            span: end - base,
            docs: written.doc_count,
            file_len: written.len,
            siglog_crc: 0,
            meta_crc: written.meta_crc,
        };
        // The entry takes its count and checksum from the file just written; the mapped file
        // is checked against them as every segment a version maps is (`load_segment`, then
        // `successor`).
        let merged = load_segment(self.vfs.as_ref(), &self.dir, meta.clone(), self.db_id)?;
        // Deletions inside the merged range are gone from the segments now.
        let remaining: Vec<u64> = version
            .deletions
            .iter()
            .filter(|d| *d < base || *d >= end)
            .collect();
        let deletions = if remaining.len() == version.deletions.len() {
            version.manifest.deletions.clone()
        } else {
            self.write_deletions(&remaining)?
        };
        let mut segments = version.manifest.segments.clone();
        segments.splice(from..to, std::iter::once(meta.clone()));
        let manifest = Manifest {
            generation: version.manifest.generation + 1,
            deletions,
            segments,
            next_file_id: self.file_ids_used(),
            ..version.manifest.clone()
        };
        // Loaded before the commit point, so that nothing after it can fail.
        let rewritten = Arc::new(merged);
        let new_version =
            version.successor(self.vfs.as_ref(), &self.dir, manifest, Some(rewritten))?;
        self.vfs
            .sync_dir(&self.dir)
            .map_err(Error::io_on(&self.dir, "fsync directory"))?;
        write_manifest(self.vfs.as_ref(), &self.dir, &new_version.manifest)?;
        let mut state = self.state.write();
        // A flush cannot have run meanwhile (maintenance lock), so only this changed.
        state.version = Arc::new(new_version);
        drop(state);
        Ok(())
    }
}
