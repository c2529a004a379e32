//! Flush (in-memory table → segment + signature-log records) and compaction (merging
//! segments), both published by writing a new manifest. The protocol and its crash cases are
//! argued in `format/commit.md`; in short: new files are written and synced, the directory is
//! synced, the manifest is written and synced, CURRENT is replaced by rename and the directory
//! synced again, and only then are obsolete files deleted.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::files::{self, FileKind};
use super::manifest::{Current, DeletionsMeta, Manifest, SegmentMeta};
use super::{Db, LoadedSegment, State, Version, WalState, io_err, load_segment, load_version};
use crate::sketch::{Signature, bbit};
use crate::storage::segment::{SegmentBuilder, SegmentOptions, merge};
use crate::storage::vfs::{OpenMode, Vfs};
use crate::storage::wal::WalWriter;
use crate::{Error, Result};
use rayon::prelude::*;

/// Writes `MANIFEST-<generation>` and points CURRENT at it, durably.
pub(crate) fn write_manifest(vfs: &dyn Vfs, dir: &Path, manifest: &Manifest) -> Result<()> {
    let bytes = manifest.encode();
    let path = dir.join(files::manifest_name(manifest.generation));
    write_new_file(vfs, &path, &bytes, OpenMode::CreateOrTruncate)?;
    vfs.sync_dir(dir).map_err(io_err(dir, "fsync directory"))?;
    let current = Current {
        generation: manifest.generation,
        manifest_len: bytes.len() as u64,
        manifest_crc: crc32fast::hash(&bytes),
    };
    let tmp = dir.join(files::CURRENT_TMP);
    write_new_file(vfs, &tmp, &current.encode(), OpenMode::CreateOrTruncate)?;
    let cur = dir.join(files::CURRENT);
    vfs.rename(&tmp, &cur).map_err(io_err(&cur, "rename"))?;
    vfs.sync_dir(dir).map_err(io_err(dir, "fsync directory"))
}

/// Writes a whole file and syncs it.
pub(crate) fn write_new_file(
    vfs: &dyn Vfs,
    path: &Path,
    bytes: &[u8],
    mode: OpenMode,
) -> Result<()> {
    let file = vfs.open(path, mode).map_err(io_err(path, "create"))?;
    file.write_all_at(bytes, 0).map_err(io_err(path, "write"))?;
    file.sync_data().map_err(io_err(path, "fsync"))
}

/// Signature-log records written per `write` call when they are packed on the way (4 MiB).
const SIGLOG_WRITE_CHUNK: usize = 4 << 20;

/// The signature-log records of new documents, one per docno of the range (zeros for dead
/// numbers).
pub(crate) enum Records<'a> {
    /// Already in one buffer.
    Packed(Vec<u8>),
    /// Written as they are produced, a chunk at a time, which spares a buffer (and its page
    /// faults) the size of the whole batch: `fill(i, out)` writes record `i` of the range.
    Lazy(&'a (dyn Fn(usize, &mut [u8]) -> Result<()> + Sync)),
}

/// Documents about to become a segment: the docno range `[base, base + span)`, its
/// signature-log records, the live documents and deletions of older documents.
pub(crate) struct NewDocs<'a> {
    pub(crate) base: u64,
    pub(crate) span: u64,
    pub(crate) records: Records<'a>,
    pub(crate) live: Vec<(u64, &'a [u8], &'a [u64])>,
    pub(crate) deleted_older: Vec<u64>,
}

/// A run of adjacent segments chosen for merging.
fn pick_merge(
    segments: &[SegmentMeta],
    deleted_in: impl Fn(&SegmentMeta) -> u64,
    factor: usize,
) -> Option<(usize, usize)> {
    let factor = factor.max(2);
    // Size class: floor(log_factor(docs)). Adjacent runs of `factor` segments of one class merge.
    let class = |s: &SegmentMeta| {
        let mut c = 0u32;
        let mut n = s.docs.max(1);
        while n >= factor as u64 {
            n /= factor as u64;
            c += 1;
        }
        c
    };
    let mut run_start = 0;
    for i in 0..segments.len() {
        if i > 0 && class(&segments[i]) != class(&segments[run_start]) {
            run_start = i;
        }
        if i + 1 - run_start >= factor {
            return Some((run_start, i + 1));
        }
    }
    // A segment with more than a third of its documents deleted is rewritten on its own.
    segments
        .iter()
        .position(|s| s.docs > 0 && deleted_in(s) * 3 > s.docs)
        .map(|i| (i, i + 1))
}

impl Db {
    pub(crate) fn maybe_flush(&self) -> Result<()> {
        let big = self.state.read().mem.approx_bytes() >= self.opts.memtable_bytes;
        if big { self.flush() } else { Ok(()) }
    }

    /// Writes the in-memory table to a new segment and makes it (and every write before this
    /// call) durable. Queries continue meanwhile.
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        let _maint = self.maintenance.lock();
        self.check_writable()?;
        // 1. Freeze the table and switch to a new WAL, with no writer in between.
        let imm = {
            let _order = self.sequencer.lock();
            if self.state.read().mem.is_empty() {
                return Ok(());
            }
            // Everything queued goes into the old WAL, durably; then the zeros written ahead
            // of its records are cut off (only the newest WAL may end in anything else).
            let seq = self.wal.lock().as_ref().map_or(0, |w| w.queued_seq);
            self.sync_wal_through(seq)?;
            let old_writer = self.wal.lock().as_ref().map(|w| w.writer.clone());
            if let Some(old) = &old_writer
                && let Err(e) = old.seal()
            {
                return self.fail(e);
            }
            let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
            let path = self.dir.join(files::wal_name(id));
            let writer = match WalWriter::create(self.vfs.as_ref(), &path) {
                Ok(w) => w,
                Err(e) => return self.fail(e),
            };
            if let Err(e) = self.vfs.sync_dir(&self.dir) {
                return self.fail(io_err(&self.dir, "fsync directory")(e));
            }
            {
                let mut wal = self.wal.lock();
                let old = wal.take();
                // Record sequence numbers continue across files; queue numbers (one per
                // batch, several batches per record) continue in memory.
                writer.set_next_seq(old.as_ref().map_or(1, |w| w.writer.next_seq()));
                let queued = old.as_ref().map_or(0, |w| w.queued_seq);
                *wal = Some(WalState {
                    id,
                    writer,
                    pending: Vec::new(),
                    queued_seq: queued,
                    synced_seq: queued,
                    syncing: false,
                    last_group: 1,
                });
            }
            let mut state = self.state.write();
            let next = state.mem.next_docno();
            let bands = self.params.lsh.bands;
            let frozen = std::mem::replace(
                &mut state.mem,
                super::memtable::MemTable::new(next, bands, self.params.sig_bytes()),
            );
            let frozen = Arc::new(frozen);
            state.imm = Some(frozen.clone());
            (frozen, id)
        };
        let (imm, new_wal_id) = imm;
        match self.write_flush(&imm, new_wal_id) {
            Ok(()) => Ok(()),
            Err(e) => self.fail(e),
        }?;
        self.remove_obsolete_files()?;
        if self.opts.auto_compact {
            self.compact_step()?;
        }
        Ok(())
    }

    fn write_flush(&self, imm: &super::memtable::MemTable, new_wal_id: u64) -> Result<()> {
        let record_bytes = self.params.sig_bytes();
        // Signature-log records for the whole docno range (dead ones zeroed).
        let all = imm.all_signatures();
        let fill = |i: usize, out: &mut [u8]| -> Result<()> {
            let stored = all
                .get(i * record_bytes..(i + 1) * record_bytes)
                .filter(|_| imm.is_live_index(i));
            match stored {
                Some(sig) => out.copy_from_slice(sig),
                None => out.fill(0),
            }
            Ok(())
        };
        let input = NewDocs {
            base: imm.base,
            span: imm.len() as u64,
            records: Records::Lazy(&fill),
            live: imm
                .live_docs()
                .map(|(d, doc)| (d, doc.key, doc.band_keys))
                .collect(),
            deleted_older: imm.deleted_older.iter().copied().collect(),
        };
        self.publish_new_docs(&input, new_wal_id, |state| state.imm = None)
    }

    /// Writes `input` as a segment plus signature-log records, merges its deletions into the
    /// durable list, and publishes a new manifest (the commit point); then installs the new
    /// version and lets `after` adjust the in-memory state under the same lock.
    pub(crate) fn publish_new_docs(
        &self,
        input: &NewDocs<'_>,
        wal_start: u64,
        after: impl FnOnce(&mut State),
    ) -> Result<()> {
        let old = self.state.read().version.clone();
        let vfs = self.vfs.as_ref();
        let record_bytes = self.params.sig_bytes();
        let mut segments = old.manifest.segments.clone();
        let mut new_segment = None;
        let next_docno = input.base + input.span;
        if input.span > 0 {
            let siglog_path = self.dir.join(files::SIGLOG);
            let siglog = self.siglog_file.as_ref().ok_or(Error::ReadOnly)?;
            // The signature-log records and the segment are independent until the manifest
            // names both (the commit point, below): write and sync the records while the
            // segment is built and written.
            let (logged, built) = rayon::join(
                || -> Result<u32> {
                    let at = files::siglog_offset(input.base, record_bytes);
                    let write = |bytes: &[u8], at: u64| {
                        siglog
                            .write_all_at(bytes, at)
                            .map_err(io_err(&siglog_path, "write"))
                    };
                    let crc = match &input.records {
                        Records::Packed(bytes) => {
                            write(bytes, at)?;
                            crc32fast::hash(bytes)
                        }
                        Records::Lazy(fill) => {
                            write_records_lazily(fill, input.span, record_bytes, at, write)?
                        }
                    };
                    siglog.sync_data().map_err(io_err(&siglog_path, "fsync"))?;
                    Ok(crc)
                },
                || -> Result<SegmentMeta> {
                    let mut builder = SegmentBuilder::new(self.params.lsh.bands, input.base)?;
                    builder.set_end_docno(next_docno)?;
                    builder.reserve(
                        input.live.len(),
                        input.live.iter().map(|(_, key, _)| key.len()).sum(),
                    );
                    for &(docno, key, band_keys) in &input.live {
                        builder.add(docno, key, band_keys)?;
                    }
                    let bytes = builder.finish(&self.segment_options())?;
                    let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
                    let path = self.dir.join(files::segment_name(id));
                    write_new_file(vfs, &path, &bytes, OpenMode::CreateNew)?;
                    Ok(SegmentMeta {
                        id,
                        base: input.base,
                        span: input.span,
                        docs: input.live.len() as u64,
                        file_len: bytes.len() as u64,
                        siglog_crc: 0, // set below, from the records as written
                    })
                },
            );
            let meta = SegmentMeta {
                siglog_crc: logged?,
                ..built?
            };
            segments.push(meta.clone());
            new_segment = Some(meta);
        }
        // Deletions of older documents join the durable list.
        let deletions = if input.deleted_older.is_empty() {
            old.manifest.deletions.clone()
        } else {
            let merged: BTreeSet<u64> = old
                .deletions
                .iter()
                .chain(input.deleted_older.iter().copied())
                .collect();
            let list: Vec<u64> = merged.into_iter().collect();
            self.write_deletions(&list)?
        };
        let manifest = Manifest {
            generation: old.manifest.generation + 1,
            params: self.params,
            next_docno,
            siglog_records: next_docno,
            wal_start,
            next_file_id: self.next_file_id.load(Ordering::SeqCst),
            deletions,
            segments,
        };
        self.vfs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "fsync directory"))?;
        write_manifest(vfs, &self.dir, &manifest)?;

        // Published: install the new version for queries.
        let mut loaded: Vec<Arc<LoadedSegment>> = old.segments.clone();
        if let Some(meta) = new_segment {
            loaded.push(Arc::new(load_segment(vfs, &self.dir, meta)?));
        }
        let version = self.reload_version(manifest, loaded)?;
        let mut state = self.state.write();
        state.version = Arc::new(version);
        after(&mut state);
        Ok(())
    }

    /// Inserts many documents at once, bypassing the WAL: they are written straight to a new
    /// segment and the signature log and are durable when this returns (the commit point is the
    /// same manifest switch as a flush). Writers wait meanwhile; queries go on. Existing keys
    /// are replaced, and within `docs` the last copy of a key wins.
    pub fn bulk_insert<K: AsRef<[u8]> + Sync>(&self, docs: &[(K, Signature)]) -> Result<()> {
        self.check_writable()?;
        for (key, sig) in docs {
            super::check_key(key.as_ref())?;
            self.check_signature(sig)?;
        }
        // Band keys and packed signatures on every core, into flat buffers, before any lock.
        let n = docs.len();
        let bands = self.params.lsh.bands;
        let mut band_keys = vec![0u64; n * bands];
        band_keys
            .par_chunks_mut(bands.max(1))
            .zip(docs.par_iter())
            .try_for_each(|(bk, (_, sig))| self.banding.band_keys_to_slice(sig.slots(), bk))?;
        let keys: Vec<&[u8]> = docs.iter().map(|(k, _)| k.as_ref()).collect();
        // The signatures are packed as the signature log is written (they were checked above,
        // so packing cannot fail).
        let bits = self.params.bits;
        let pack = |i: usize, out: &mut [u8]| -> Result<()> {
            let (_, sig) = docs
                .get(i)
                .ok_or_else(|| Error::invalid("bulk", "record index out of range"))?;
            bbit::pack_into(sig.slots(), bits, out)
        };
        self.bulk_insert_prepared(&keys, &band_keys, Records::Lazy(&pack))
    }

    /// The locked part of a bulk insert, on documents already banded: `band_keys` holds
    /// `bands` keys per document, `records` one packed signature per document.
    pub(crate) fn bulk_insert_prepared(
        &self,
        keys: &[&[u8]],
        band_keys: &[u64],
        records: Records<'_>,
    ) -> Result<()> {
        let n = keys.len();
        let bands = self.params.lsh.bands;
        let record_bytes = self.params.sig_bytes();
        let packed_len_ok = match &records {
            Records::Packed(bytes) => bytes.len() == n * record_bytes,
            Records::Lazy(_) => true,
        };
        if band_keys.len() != n * bands || !packed_len_ok {
            return Err(Error::invalid(
                "bulk",
                "band keys and records do not match the documents",
            ));
        }
        // Within the batch the last copy of a key wins: find earlier copies by sorting key
        // hashes (ties broken by position).
        let mut by_hash: Vec<(u64, u32)> = keys
            .par_iter()
            .enumerate()
            .map(|(i, k)| (xxhash_rust::xxh3::xxh3_64(k), i as u32))
            .collect();
        by_hash.par_sort_unstable();
        let mut superseded = vec![false; n];
        for run in by_hash.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
            for (j, &(_, i)) in run.iter().enumerate() {
                let key = keys.get(i as usize);
                let later = run
                    .get(j + 1..)
                    .unwrap_or_default()
                    .iter()
                    .any(|&(_, l)| keys.get(l as usize) == key);
                if later && let Some(s) = superseded.get_mut(i as usize) {
                    *s = true;
                }
            }
        }
        // The in-memory table must be empty, so that these documents take the next numbers.
        let (_maint, _order) = loop {
            self.flush()?;
            let maint = self.maintenance.lock();
            let order = self.sequencer.lock();
            if self.state.read().mem.is_empty() {
                break (maint, order);
            }
        };
        self.check_writable()?;
        let (base, wal_start) = {
            let state = self.state.read();
            (state.mem.next_docno(), state.version.manifest.wal_start)
        };
        // Stored copies of the batch's keys are deleted.
        let deleted_older: Vec<u64> = {
            let state = self.state.read();
            if state.version.segments.is_empty() {
                Vec::new()
            } else {
                let found: Result<Vec<Option<u64>>> = keys
                    .par_iter()
                    .zip(superseded.par_iter())
                    .filter(|(_, s)| !**s)
                    .map(|(key, _)| state.lookup_key(key))
                    .collect();
                found?.into_iter().flatten().collect()
            }
        };
        let mut live = Vec::with_capacity(n);
        for (i, (key, bk)) in keys
            .iter()
            .zip(band_keys.chunks_exact(bands.max(1)))
            .enumerate()
        {
            if !superseded.get(i).copied().unwrap_or(false) {
                live.push((base + i as u64, *key, bk));
            }
        }
        // Superseded copies keep their numbers but get zeroed records, like deleted ones.
        let is_superseded = |i: usize| superseded.get(i).copied().unwrap_or(false);
        let zeroing_fill;
        let records = match records {
            Records::Packed(mut bytes) => {
                for (i, rec) in bytes.chunks_exact_mut(record_bytes.max(1)).enumerate() {
                    if is_superseded(i) {
                        rec.fill(0);
                    }
                }
                Records::Packed(bytes)
            }
            Records::Lazy(fill) => {
                zeroing_fill = move |i: usize, out: &mut [u8]| -> Result<()> {
                    if is_superseded(i) {
                        out.fill(0);
                        Ok(())
                    } else {
                        fill(i, out)
                    }
                };
                Records::Lazy(&zeroing_fill)
            }
        };
        let input = NewDocs {
            base,
            span: n as u64,
            records,
            live,
            deleted_older,
        };
        let sig_bytes = record_bytes;
        let result = self.publish_new_docs(&input, wal_start, |state| {
            state.mem = super::memtable::MemTable::new(base + n as u64, bands, sig_bytes);
        });
        match result {
            Ok(()) => {}
            Err(e) => return self.fail(e),
        }
        drop(_order);
        drop(_maint);
        self.remove_obsolete_files()?;
        if self.opts.auto_compact {
            self.compact_step()?;
        }
        Ok(())
    }

    fn segment_options(&self) -> SegmentOptions {
        SegmentOptions {
            bucket_cap: self.params.bucket_cap,
        }
    }

    fn write_deletions(&self, sorted: &[u64]) -> Result<DeletionsMeta> {
        if sorted.is_empty() {
            return Ok(DeletionsMeta::default());
        }
        let bytes = files::encode_deletions(sorted);
        let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(files::deletions_name(id));
        write_new_file(self.vfs.as_ref(), &path, &bytes, OpenMode::CreateNew)?;
        Ok(DeletionsMeta {
            id,
            count: sorted.len() as u64,
            file_len: bytes.len() as u64,
        })
    }

    /// A version for `manifest`, reusing already mapped segments.
    fn reload_version(
        &self,
        manifest: Manifest,
        loaded: Vec<Arc<LoadedSegment>>,
    ) -> Result<Version> {
        let mut fresh = load_version_shell(self.vfs.as_ref(), &self.dir, &manifest)?;
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for meta in &manifest.segments {
            match loaded.iter().find(|s| s.meta.id == meta.id) {
                Some(s) => segments.push(s.clone()),
                None => segments.push(Arc::new(load_segment(
                    self.vfs.as_ref(),
                    &self.dir,
                    meta.clone(),
                )?)),
            }
        }
        fresh.segments = segments;
        fresh.manifest = manifest;
        Ok(fresh)
    }

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
        match self.merge_range(&version, 0, n) {
            Ok(()) => {}
            Err(e) => return self.fail(e),
        }
        drop(_maint);
        self.remove_obsolete_files()
    }

    /// One merge chosen by the policy; returns whether one happened.
    fn compact_step(&self) -> Result<bool> {
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
        let Some((from, to)) = pick_merge(
            &version.manifest.segments,
            deleted_in,
            self.opts.merge_factor,
        ) else {
            return Ok(false);
        };
        if let Err(e) = self.merge_range(&version, from, to) {
            return self.fail(e);
        }
        drop(_maint);
        self.remove_obsolete_files()?;
        Ok(true)
    }

    fn merge_range(&self, version: &Version, from: usize, to: usize) -> Result<()> {
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
        let segs: Vec<_> = inputs.iter().map(|s| &s.seg).collect();
        let bytes = merge(&segs, is_live, &self.segment_options())?;
        let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(files::segment_name(id));
        write_new_file(self.vfs.as_ref(), &path, &bytes, OpenMode::CreateNew)?;
        let record_bytes = self.params.sig_bytes();
        let siglog_crc = {
            let start = files::siglog_offset(base, record_bytes) as usize;
            let stop = files::siglog_offset(end, record_bytes) as usize;
            let bytes = version
                .siglog
                .as_deref()
                .and_then(|m| m.get(start..stop))
                .ok_or_else(|| {
                    super::codec::corruption(
                        &self.dir.join(files::SIGLOG),
                        start as u64,
                        "signature log shorter than the segments it backs",
                    )
                })?;
            crc32fast::hash(bytes)
        };
        let merged = load_segment(
            self.vfs.as_ref(),
            &self.dir,
            SegmentMeta {
                id,
                base,
                span: end - base,
                docs: 0,
                file_len: bytes.len() as u64,
                siglog_crc,
            },
        )?;
        let meta = SegmentMeta {
            docs: merged.seg.doc_count() as u64,
            ..merged.meta.clone()
        };
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
            next_file_id: self.next_file_id.load(Ordering::SeqCst),
            ..version.manifest.clone()
        };
        self.vfs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "fsync directory"))?;
        write_manifest(self.vfs.as_ref(), &self.dir, &manifest)?;
        let mut loaded: Vec<Arc<LoadedSegment>> = version.segments.clone();
        loaded.push(Arc::new(LoadedSegment { meta, ..merged }));
        let new_version = self.reload_version(manifest, loaded)?;
        let mut state = self.state.write();
        // A flush cannot have run meanwhile (maintenance lock), so only this changed.
        state.version = Arc::new(new_version);
        drop(state);
        Ok(())
    }

    /// Deletes files the durable manifest no longer references (and leftovers of crashes).
    pub(crate) fn remove_obsolete_files(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let (manifest, wal_id) = {
            let state = self.state.read();
            let wal_id = self.wal.lock().as_ref().map(|w| w.id);
            (state.version.manifest.clone(), wal_id)
        };
        let names = self
            .vfs
            .list_dir(&self.dir)
            .map_err(io_err(&self.dir, "list directory"))?;
        let mut removed = false;
        for name in names {
            let obsolete = match files::classify(&name) {
                Some(FileKind::Manifest(g)) => g < manifest.generation,
                Some(FileKind::Segment(id)) => {
                    id < manifest.next_file_id && !manifest.segments.iter().any(|s| s.id == id)
                }
                Some(FileKind::Deletions(id)) => {
                    id < manifest.next_file_id && id != manifest.deletions.id
                }
                Some(FileKind::Wal(id)) => id < manifest.wal_start && Some(id) != wal_id,
                Some(FileKind::CurrentTmp) => true,
                None => false,
            };
            if obsolete {
                let path = self.dir.join(&name);
                // A failed removal leaves an orphan that the next open removes.
                if self.vfs.remove_file(&path).is_ok() {
                    removed = true;
                }
            }
        }
        if removed {
            let _ = self.vfs.sync_dir(&self.dir);
        }
        Ok(())
    }
}

/// The non-segment parts of a version (signature log and deletion list).
fn load_version_shell(vfs: &dyn Vfs, dir: &Path, manifest: &Manifest) -> Result<Version> {
    let shell = Manifest {
        segments: Vec::new(),
        ..manifest.clone()
    };
    load_version(vfs, dir, shell)
}

#[allow(dead_code)]
fn _assert_state_send_sync(s: &State) -> &State {
    s
}

/// Writes `span` records produced by `fill` from offset `at` on, a chunk at a time (each chunk
/// filled on every core), and returns their CRC-32.
fn write_records_lazily(
    fill: &(dyn Fn(usize, &mut [u8]) -> Result<()> + Sync),
    span: u64,
    record_bytes: usize,
    at: u64,
    write: impl Fn(&[u8], u64) -> Result<()>,
) -> Result<u32> {
    let record_bytes = record_bytes.max(1);
    let span = usize::try_from(span).map_err(|_| Error::invalid("span", "too large"))?;
    let per_chunk = (SIGLOG_WRITE_CHUNK / record_bytes).clamp(1, span.max(1));
    let mut buf = vec![0u8; per_chunk * record_bytes];
    let mut crc = crc32fast::Hasher::new();
    let mut start = 0usize;
    while start < span {
        let count = per_chunk.min(span - start);
        let chunk = buf
            .get_mut(..count * record_bytes)
            .ok_or_else(|| Error::invalid("records", "chunk out of range"))?;
        chunk
            .par_chunks_mut(record_bytes)
            .enumerate()
            .try_for_each(|(j, rec)| fill(start + j, rec))?;
        crc.update(chunk);
        write(chunk, at + (start * record_bytes) as u64)?;
        start += count;
    }
    Ok(crc.finalize())
}
