//! The commit protocol of `format/commit.md`, one function a step: new immutable files are
//! written and synced ([`write_new_file`]), the directory is synced, a new manifest is written
//! and CURRENT switched to it by rename ([`write_manifest`]: the commit point), and only then
//! are files the durable manifest no longer names removed
//! ([`Db::remove_obsolete_files`](super::Db::remove_obsolete_files)). Flush, bulk insert and
//! merge publish new documents through [`Db::publish_new_docs`](super::Db::publish_new_docs);
//! compaction publishes its own manifest the same way.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Db;
use super::state::State;
use super::version::{Manifest, load_segment};
use crate::storage::deletions;
use crate::storage::manifest::{Current, DeletionsMeta, MANIFEST_VERSION, SegmentMeta};
use crate::storage::names::{self, FileKind};
use crate::storage::segment::{DocColumns, SegmentBuilder, Sink};
use crate::storage::vfs::{OpenMode, Vfs};
use crate::{Error, Result};

/// Writes `MANIFEST-<generation>` and points CURRENT at it, durably.
pub(super) fn write_manifest(vfs: &dyn Vfs, dir: &Path, manifest: &Manifest) -> Result<()> {
    let bytes = manifest.encode();
    let path = dir.join(names::manifest_name(manifest.generation));
    write_new_file(vfs, &path, &bytes, OpenMode::CreateOrTruncate)?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))?;
    let current = Current {
        version: manifest.format_version,
        generation: manifest.generation,
        manifest_len: bytes.len() as u64,
        manifest_crc: crc32fast::hash(&bytes),
    };
    let tmp = dir.join(names::CURRENT_TMP);
    write_new_file(vfs, &tmp, &current.encode(), OpenMode::CreateOrTruncate)?;
    let cur = dir.join(names::CURRENT);
    vfs.rename(&tmp, &cur)
        .map_err(Error::io_on(&cur, "rename"))?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))
}

/// Writes a whole file and syncs it.
pub(super) fn write_new_file(
    vfs: &dyn Vfs,
    path: &Path,
    bytes: &[u8],
    mode: OpenMode,
) -> Result<()> {
    write_new_file_with(vfs, path, mode, |sink| sink(bytes, 0))
}

/// A large file is written in pieces of this size, the writeback of each started as soon as
/// it is copied in.
const WRITEBACK_PIECE: usize = 16 << 20;

/// Opens the file at `path`, lets `write` hand it its bytes through a sink (`sink(bytes,
/// offset)`), and syncs it. The disk starts on each piece as soon as it is copied in, so the
/// final sync waits for the last pieces only.
pub(super) fn write_new_file_with<T>(
    vfs: &dyn Vfs,
    path: &Path,
    mode: OpenMode,
    write: impl FnOnce(&mut Sink<'_>) -> Result<T>,
) -> Result<T> {
    let file = vfs.open(path, mode).map_err(Error::io_on(path, "create"))?;
    let written = (|| {
        let mut sink = |bytes: &[u8], mut at: u64| -> Result<()> {
            for piece in bytes.chunks(WRITEBACK_PIECE) {
                file.write_all_at(piece, at)
                    .map_err(Error::io_on(path, "write"))?;
                file.start_writeback(at, piece.len() as u64);
                at += piece.len() as u64;
            }
            Ok(())
        };
        let out = write(&mut sink)?;
        file.sync_data().map_err(Error::io_on(path, "fsync"))?;
        Ok(out)
    })();
    if written.is_err() && mode == OpenMode::CreateNew {
        // Nothing refers to a file until its write returns, so a failed one is only a partial
        // copy taking space (on a full disk, the space a retry needs). Removed best effort: a
        // file left behind is removed when the database is next opened for writing.
        drop(file);
        let _ = vfs.remove_file(path);
    }
    written
}

/// The packed signatures of new documents, one record per docno of the range (dead numbers'
/// records are never read).
pub(super) enum Records<'a> {
    /// Already in one buffer.
    Packed(Vec<u8>),
    /// Produced on demand, on every core: `fill(i, out)` writes record `i` of the range.
    Lazy(&'a (dyn Fn(usize, &mut [u8]) -> Result<()> + Sync)),
}

/// Coded shingle sets of a run of documents, back to back (indexes that store sets; empty
/// otherwise).
#[derive(Clone, Debug, Default)]
pub(super) struct CodedSets {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl CodedSets {
    pub(super) fn push(&mut self, coded: &[u8]) {
        self.data.extend_from_slice(coded);
        self.ends.push(self.data.len());
    }

    pub(super) fn append(&mut self, other: &CodedSets) {
        for i in 0..other.len() {
            self.push(other.get(i));
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Set `i`; empty when there is none.
    pub(super) fn get(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(prev) => self.ends.get(prev).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.data.get(start..end).unwrap_or_default()
    }
}

/// The optional per-document values of a run of new documents: coded shingle sets (one per
/// document in an index that stores sets, none otherwise) and column values (one per
/// document, each value present or not, in an index with per-document columns; none
/// otherwise).
#[derive(Clone, Copy, Debug)]
pub(super) struct Columns<'a> {
    pub(super) sets: &'a CodedSets,
    pub(super) values: &'a [DocColumns],
}

/// A live new document.
#[derive(Clone, Debug)]
pub(super) struct LiveDoc<'a> {
    pub(super) docno: u64,
    pub(super) key: &'a [u8],
    pub(super) band_keys: &'a [u64],
    /// Its coded shingle set (empty in an index that stores none).
    pub(super) set: &'a [u8],
    /// Its column values (stored in an index with per-document columns).
    pub(super) columns: DocColumns,
}

/// The WAL file a flush moved writes to: the new manifest's WAL start.
#[derive(Clone, Copy, Debug)]
pub(super) struct NewWal {
    /// Its file id (older WAL files are dropped).
    pub(super) id: u64,
    /// The sequence number of its first record.
    pub(super) first_seq: u64,
}

/// Documents about to become a segment: the docno range `[base, base + span)`, its
/// signatures, the live documents and deletions of older documents.
pub(super) struct NewDocs<'a> {
    pub(super) base: u64,
    pub(super) span: u64,
    pub(super) records: Records<'a>,
    pub(super) live: Vec<LiveDoc<'a>>,
    pub(super) deleted_older: Vec<u64>,
}

impl Db {
    /// A fresh file id. Ids named by a manifest are never reused; a file with an id at or
    /// above the durable manifest's `next_file_id` may be an in-flight write (or, at a
    /// writer's open, a leftover that open removes, whose id may then be handed out again).
    pub(super) fn new_file_id(&self) -> u64 {
        self.next_file_id.fetch_add(1, Ordering::SeqCst)
    }

    /// The `next_file_id` a manifest written now records.
    pub(super) fn file_ids_used(&self) -> u64 {
        self.next_file_id.load(Ordering::SeqCst)
    }

    /// Writes `input` as a segment (signatures included), merges its deletions into the
    /// durable list, and publishes a new manifest (the commit point); then installs the new
    /// version and lets `after` adjust the in-memory state under the same lock. `wal` is the
    /// WAL file a flush moved to (the new manifest's WAL start), `None` to keep the old start.
    pub(super) fn publish_new_docs(
        &self,
        input: &NewDocs<'_>,
        wal: Option<NewWal>,
        after: impl FnOnce(&mut State),
    ) -> Result<()> {
        let old = self.state.read().version.clone();
        let vfs = self.vfs.as_ref();
        let mut segments = old.manifest.segments.clone();
        let new_segment = self.write_segment(input)?;
        segments.extend(new_segment.clone());
        // Deletions of older documents join the durable list.
        let deletions = if input.deleted_older.is_empty() {
            old.manifest.deletions.clone()
        } else {
            let union: BTreeSet<u64> = old
                .deletions
                .iter()
                .chain(input.deleted_older.iter().copied())
                .collect();
            let list: Vec<u64> = union.into_iter().collect();
            self.write_deletions(&list)?
        };
        let (wal_start, wal_next_seq) = match wal {
            Some(wal) => (wal.id, wal.first_seq),
            None => (old.manifest.wal_start, old.manifest.wal_next_seq),
        };
        let manifest = Manifest {
            format_version: MANIFEST_VERSION,
            generation: old.manifest.generation + 1,
            db_id: old.manifest.db_id,
            features: old.manifest.features,
            params: self.params,
            keep: old.manifest.keep.clone(),
            next_docno: input.base + input.span,
            siglog_records: 0,
            wal_start,
            wal_next_seq,
            next_file_id: self.file_ids_used(),
            deletions,
            segments,
        };
        // The new version is loaded (its files mapped and checked) before the commit point, so
        // that nothing after it can fail: an error from here on means not committed.
        let added = match new_segment {
            Some(meta) => Some(Arc::new(load_segment(vfs, &self.dir, meta, self.db_id)?)),
            None => None,
        };
        let version = old.successor(vfs, &self.dir, manifest, added)?;
        self.vfs
            .sync_dir(&self.dir)
            .map_err(Error::io_on(&self.dir, "fsync directory"))?;
        write_manifest(vfs, &self.dir, &version.manifest)?;

        // Published: install the new version for queries.
        let mut state = self.state.write();
        state.version = Arc::new(version);
        after(&mut state);
        Ok(())
    }

    /// How the segments this handle writes (flush, bulk insert, compaction) are encoded.
    pub(super) fn segment_options(&self) -> crate::storage::segment::SegmentOptions {
        self.params.segment_options(self.band_filters)
    }

    /// Writes the documents of `input` as a new segment file (none for an empty range).
    fn write_segment(&self, input: &NewDocs<'_>) -> Result<Option<SegmentMeta>> {
        if input.span == 0 {
            return Ok(None);
        }
        let builder = self.segment_builder(input)?;
        // Numbered before it is encoded: the number is in its header.
        let id = self.new_file_id();
        let path = self.dir.join(names::segment_name(id));
        // The signatures are packed as they are written, a piece at a time, on every core.
        let fill = |ordinal: usize, out: &mut [u8]| input.record_into(ordinal, out);
        let opts = self.segment_options();
        let written = write_new_file_with(self.vfs.as_ref(), &path, OpenMode::CreateNew, |sink| {
            builder.write_as(&opts, self.db_id.file(id), &fill, sink)
        })?;
        Ok(Some(SegmentMeta {
            id,
            base: input.base,
            span: input.span,
            docs: written.doc_count,
            file_len: written.len,
            siglog_crc: 0,
            meta_crc: written.meta_crc,
        }))
    }

    /// A segment builder holding the keys, band keys and sets of `input`'s live documents.
    fn segment_builder(&self, input: &NewDocs<'_>) -> Result<SegmentBuilder> {
        let mut builder = SegmentBuilder::with_signatures(
            self.params.lsh.bands,
            input.base,
            self.params.sig_bytes(),
        )?;
        if self.params.store_sets {
            builder = builder.with_sets();
        }
        if self.columns.any() {
            builder = builder.with_columns(self.columns);
        }
        builder.set_end_docno(input.base + input.span)?;
        builder.reserve(
            input.live.len(),
            input.live.iter().map(|doc| doc.key.len()).sum(),
        );
        for doc in &input.live {
            builder.add(doc.docno, doc.key, doc.band_keys)?;
            if self.params.store_sets {
                builder.add_set(doc.set)?;
            }
            if self.columns.any() {
                builder.add_columns(doc.columns.clone())?;
            }
        }
        Ok(builder)
    }

    pub(super) fn write_deletions(&self, sorted: &[u64]) -> Result<DeletionsMeta> {
        if sorted.is_empty() {
            return Ok(DeletionsMeta::default());
        }
        // Numbered before it is encoded: the number is in its header.
        let id = self.new_file_id();
        let bytes = deletions::encode(sorted, self.db_id.file(id));
        let path = self.dir.join(names::deletions_name(id));
        write_new_file(self.vfs.as_ref(), &path, &bytes, OpenMode::CreateNew)?;
        Ok(DeletionsMeta {
            id,
            count: sorted.len() as u64,
            file_len: bytes.len() as u64,
            crc: deletions::trailing_crc(&bytes),
        })
    }

    /// What follows a commit: obsolete files removed, and a compaction step when they are
    /// automatic. (Its failure does not undo the commit: callers pass it to `after_commit`.)
    pub(super) fn upkeep(&self) -> Result<()> {
        self.remove_obsolete_files();
        if self.opts.auto_compact {
            self.compact_step()?;
        }
        Ok(())
    }

    /// [`Db::remove_obsolete_files_at`] once the writer is running, as a best effort: a file
    /// not removed now (the directory could not be listed, a removal failed) is an orphan the
    /// next writer's open removes, and nothing committed depends on it.
    pub(super) fn remove_obsolete_files(&self) {
        let _ = self.remove_obsolete_files_at(false);
    }

    /// Deletes files the durable manifest no longer references (and leftovers of crashes).
    /// `at_open`: called as the writer opens, before it numbers any segment or deletions file, so
    /// that a segment or deletions file numbered past the manifest's counter is also a
    /// leftover (of a write that failed or was cut off before its commit); later, such a file
    /// may be one this process is writing.
    pub(super) fn remove_obsolete_files_at(&self, at_open: bool) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let (manifest, wal_id) = {
            let state = self.state.read();
            let wal_id = self.group_commit.wal_id();
            (state.version.manifest.clone(), wal_id)
        };
        let names = self
            .vfs
            .list_dir(&self.dir)
            .map_err(Error::io_on(&self.dir, "list directory"))?;
        let mut removed = false;
        for name in names {
            let obsolete = match names::classify(&name) {
                Some(FileKind::Manifest(g)) => g < manifest.generation,
                Some(FileKind::Segment(id)) => {
                    (at_open || id < manifest.next_file_id)
                        && !manifest.segments.iter().any(|s| s.id == id)
                }
                Some(FileKind::Deletions(id)) => {
                    (at_open || id < manifest.next_file_id) && id != manifest.deletions.id
                }
                Some(FileKind::Wal(id)) => id < manifest.wal_start && Some(id) != wal_id,
                Some(FileKind::CurrentTmp) => true,
                // Kept for a person to look at; `verify` reports it until it is removed.
                Some(FileKind::TornTail(..)) => false,
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

impl NewDocs<'_> {
    /// Writes the packed signature of the `ordinal`-th live document into `out` (one
    /// record long). Only live documents' records are read: a dead number's record may hold
    /// anything.
    fn record_into(&self, ordinal: usize, out: &mut [u8]) -> Result<()> {
        let doc = self
            .live
            .get(ordinal)
            .ok_or_else(|| Error::invalid("records", format!("no live document {ordinal}")))?;
        let record = usize::try_from(doc.docno - self.base).unwrap_or(usize::MAX);
        match &self.records {
            Records::Packed(bytes) => {
                let at = record.saturating_mul(out.len());
                let sig = bytes.get(at..at.saturating_add(out.len())).ok_or_else(|| {
                    Error::invalid("records", format!("no record for document {}", doc.docno))
                })?;
                out.copy_from_slice(sig);
                Ok(())
            }
            Records::Lazy(fill) => fill(record, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// New documents 10..16 of which 11, 13 and 14 are dead (deleted, or superseded within a
    /// bulk insert): their records are never read, whether given packed or produced on demand,
    /// so what a dead record holds never reaches a segment (flush and bulk insert need not
    /// clear them).
    #[test]
    fn only_live_records_are_read() {
        let record_bytes = 4;
        let live_docnos = [10u64, 12, 15];
        let live = live_docnos
            .iter()
            .map(|&docno| LiveDoc {
                docno,
                key: b"k",
                band_keys: &[],
                set: &[],
                columns: DocColumns::default(),
            })
            .collect::<Vec<_>>();
        let record = |i: usize| -> Vec<u8> {
            let live = live_docnos.contains(&(10 + i as u64));
            vec![if live { i as u8 + 1 } else { 0xEE }; record_bytes]
        };
        let want: Vec<u8> = live_docnos
            .iter()
            .flat_map(|&d| record(d as usize - 10))
            .collect();
        let docs = |records| NewDocs {
            base: 10,
            span: 6,
            records,
            live: live.clone(),
            deleted_older: Vec::new(),
        };
        let live_signatures = |docs: NewDocs<'_>| -> Result<Vec<u8>> {
            let mut out = vec![0u8; docs.live.len() * record_bytes];
            for (i, slot) in out.chunks_exact_mut(record_bytes).enumerate() {
                docs.record_into(i, slot)?;
            }
            assert!(docs.record_into(docs.live.len(), &mut [0u8; 4]).is_err());
            Ok(out)
        };
        let packed: Vec<u8> = (0..6).flat_map(record).collect();
        let got = live_signatures(docs(Records::Packed(packed)));
        assert_eq!(got.unwrap(), want);
        let read = parking_lot::Mutex::new(Vec::new());
        let fill = |i: usize, out: &mut [u8]| -> Result<()> {
            read.lock().push(i);
            out.copy_from_slice(&record(i));
            Ok(())
        };
        let got = live_signatures(docs(Records::Lazy(&fill)));
        assert_eq!(got.unwrap(), want);
        let mut read = read.into_inner();
        read.sort_unstable();
        assert_eq!(read, [0, 2, 5]);
    }
}
