//! The committed state a manifest names, mapped and checked: segments, the signature log and
//! the deletion list. A [`Version`] is immutable and shared (`Arc`): a query or a dedup pass
//! holds the one it started with while flushes and compactions install newer ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::params::IndexParams;
use crate::storage::codec::Encoder;
use crate::storage::deletions::Deletions;
use crate::storage::identity::DbId;
use crate::storage::manifest::v3::PARAMS_AT;
use crate::storage::manifest::{MANIFEST_V1, MANIFEST_V2, MANIFEST_V3, SegmentMeta, StoredParams};
use crate::storage::names;
use crate::storage::segment::{SEGMENT_FORMAT_V1, SEGMENT_FORMAT_V2, SEGMENT_FORMAT_V3, Segment};
use crate::storage::siglog;
use crate::storage::vfs::{Mapped, PrefetchBatch, Vfs};
use crate::{Error, Result};

/// The manifest as this layer reads it: with the index parameters.
pub(super) type Manifest = crate::storage::manifest::Manifest<IndexParams>;

/// One segment file, mapped and checked.
pub(super) struct LoadedSegment {
    pub(super) meta: SegmentMeta,
    pub(super) seg: Segment<Mapped>,
    pub(super) path: PathBuf,
    /// Cap ranks of its hot buckets, kept for later queries.
    pub(super) cap_ranks: super::query_cap::CapRankCache,
    /// The size classes of its documents, read from its SET_SIZE column when a containment
    /// query first needs them.
    size_classes: std::sync::OnceLock<u128>,
}

impl LoadedSegment {
    /// The size classes of its documents, as bits
    /// ([`class_bit`](crate::sketch::containment::class_bit)): deleted ones too, so a superset
    /// of the live documents' classes.
    pub(super) fn size_classes(&self) -> Result<u128> {
        if let Some(&classes) = self.size_classes.get() {
            return Ok(classes);
        }
        let mut classes = 0u128;
        for i in 0..self.seg.doc_count() {
            if let Some(size) = self.seg.set_size_at(i)? {
                classes |= crate::sketch::containment::class_bit(u64::from(size));
            }
        }
        Ok(*self.size_classes.get_or_init(|| classes))
    }
}

/// An immutable view of the committed files.
pub(super) struct Version {
    pub(super) manifest: Manifest,
    pub(super) segments: Vec<Arc<LoadedSegment>>,
    pub(super) siglog: Option<Mapped>,
    pub(super) deletions: Deletions,
}

impl Version {
    /// The segment whose docno range holds `docno`.
    pub(super) fn segment_of(&self, docno: u64) -> Option<&LoadedSegment> {
        let i = self
            .segments
            .partition_point(|s| s.meta.base + s.meta.span <= docno);
        self.segments
            .get(i)
            .filter(|s| s.meta.base <= docno)
            .map(|s| s.as_ref())
    }

    /// The packed signature of committed document `docno`: read (and checked) from its
    /// segment, or, in a version-1 database, from the signature log.
    pub(super) fn signature(&self, docno: u64, record_bytes: usize) -> Result<Option<&[u8]>> {
        if let Some(map) = &self.siglog {
            if docno >= self.manifest.siglog_records {
                return Ok(None);
            }
            let start = siglog::offset(docno, record_bytes) as usize;
            return Ok(map.get(start..start + record_bytes));
        }
        match self.segment_of(docno) {
            Some(seg) => seg.seg.signature_of(docno),
            None => Ok(None),
        }
    }

    /// Starts reading what verifying each of `docnos` (ascending) reads: its signature and
    /// the doc-table entries that lead to its key (a hint for cold queries), as few merged
    /// ranges per file.
    pub(super) fn prefetch_documents(&self, docnos: &[u64], record_bytes: usize) {
        if let Some(map) = &self.siglog {
            let mut batch = PrefetchBatch::default();
            for &docno in docnos.iter().filter(|&&d| d < self.manifest.siglog_records) {
                batch.add(siglog::offset(docno, record_bytes) as usize, record_bytes);
            }
            batch.issue(map);
        }
        self.for_each_segment_run(docnos, |seg, run| {
            seg.prefetch_documents(run, self.siglog.is_none());
        });
    }

    /// Starts reading the keys of committed documents `docnos` (ascending; a hint for cold
    /// queries, after [`Version::prefetch_documents`]).
    pub(super) fn prefetch_keys(&self, docnos: &[u64]) {
        self.for_each_segment_run(docnos, |seg, run| seg.prefetch_keys(run));
    }

    /// Calls `f` with each segment and the run of `docnos` (ascending) that falls in its
    /// docno range, skipping segments with none.
    fn for_each_segment_run(&self, docnos: &[u64], mut f: impl FnMut(&Segment<Mapped>, &[u64])) {
        let mut rest = docnos;
        for seg in &self.segments {
            let end = rest.partition_point(|&d| d < seg.meta.base + seg.meta.span);
            let (run, after) = rest.split_at(end);
            rest = after;
            if !run.is_empty() {
                f(&seg.seg, run);
            }
        }
    }
}

impl Version {
    /// Version 1: the signature-log records of `segment`'s document range, checked against the
    /// checksum the manifest recorded for them: whatever copies them (an export, an upgrade)
    /// must never give damaged records a fresh checksum. Version 2 has no signature log: its
    /// segments' own checksums cover their signatures, and this returns an empty slice.
    pub(super) fn checked_records(
        &self,
        segment: &SegmentMeta,
        record_bytes: usize,
        siglog_path: &Path,
    ) -> Result<&[u8]> {
        if self.siglog.is_none() {
            return Ok(&[]);
        }
        let start = siglog::offset(segment.base, record_bytes);
        let stop = siglog::offset(segment.base + segment.span, record_bytes);
        let bytes = self
            .siglog
            .as_deref()
            .and_then(|m| m.get(start as usize..stop as usize))
            .ok_or_else(|| {
                Error::corruption(
                    siglog_path,
                    start,
                    "signature log is shorter than its segments need",
                )
            })?;
        if crc32fast::hash(bytes) != segment.siglog_crc {
            return Err(Error::corruption(
                siglog_path,
                start,
                format!(
                    "checksum of records {}..{} (segment {}) does not match the manifest",
                    segment.base,
                    segment.base + segment.span,
                    segment.id
                ),
            ));
        }
        Ok(bytes)
    }

    /// The version `manifest` names, reusing the segments of `self` that it still names (they
    /// are immutable, so their maps stay valid) and mapping the others.
    pub(super) fn successor(
        &self,
        vfs: &dyn Vfs,
        dir: &Path,
        manifest: Manifest,
        also: Option<Arc<LoadedSegment>>,
    ) -> Result<Version> {
        let shell = Manifest {
            segments: Vec::new(),
            ..manifest.clone()
        };
        let mut next = load_version(vfs, dir, shell)?;
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for (i, meta) in manifest.segments.iter().enumerate() {
            if let Some(s) = self.segments.iter().find(|s| s.meta.id == meta.id) {
                segments.push(s.clone());
                continue;
            }
            // New to this version (`also` is the segment just built): checked as every map is.
            let loaded = match also.as_ref().filter(|s| s.meta.id == meta.id) {
                Some(s) => s.clone(),
                None => Arc::new(load_segment(vfs, dir, meta.clone(), manifest.db_id)?),
            };
            check_segment_fits(&loaded, &manifest)?;
            check_doc_count(&loaded, &manifest, dir, i)?;
            segments.push(loaded);
        }
        next.segments = segments;
        next.manifest = manifest;
        Ok(next)
    }
}

/// Maps and checks every file a manifest names.
pub(super) fn load_version(vfs: &dyn Vfs, dir: &Path, manifest: Manifest) -> Result<Version> {
    let mut segments = Vec::with_capacity(manifest.segments.len());
    for (i, meta) in manifest.segments.iter().enumerate() {
        let loaded = load_segment(vfs, dir, meta.clone(), manifest.db_id)?;
        check_segment_fits(&loaded, &manifest)?;
        check_doc_count(&loaded, &manifest, dir, i)?;
        // Every query reads one filter block and one directory slot per band: have the OS
        // read the filters and directories (about 1.5 B per posting) in the background now
        // rather than a block at a time later.
        loaded.seg.prefetch_directories_and_filters();
        segments.push(Arc::new(loaded));
    }
    let siglog = if manifest.format_version == MANIFEST_V1 {
        let path = dir.join(names::SIGLOG);
        Some(vfs.map_readonly(&path).map_err(named_file_error(&path))?)
    } else {
        None
    };
    let deletions = load_deletions(vfs, dir, &manifest)?;
    Ok(Version {
        manifest,
        segments,
        siglog,
        deletions,
    })
}

/// Maps and checks the deletion list a manifest names (none: an empty list). In version 3
/// it must carry the database's identity and the manifest's number, and end with the
/// checksum the manifest recorded.
fn load_deletions(vfs: &dyn Vfs, dir: &Path, manifest: &Manifest) -> Result<Deletions> {
    let meta = &manifest.deletions;
    if meta.id == 0 {
        return Ok(Deletions::default());
    }
    let path = dir.join(names::deletions_name(meta.id));
    let map = map_named(vfs, &path, meta.file_len, "deletion list")?;
    let identity = manifest.db_id.file(meta.id);
    let deletions = Deletions::open(map, &path, meta.count, identity)?;
    if identity.is_some() && deletions.crc() != meta.crc {
        return Err(Error::corruption(
            &path,
            deletions.crc_offset(),
            format!(
                "deletion list checksum {:#010x} differs from the manifest's {:#010x} (a list \
                 of this database's past, or of another one)",
                deletions.crc(),
                meta.crc
            ),
        ));
    }
    Ok(deletions)
}

/// Maps and opens the segment `meta` names, which must carry `db_id` (unless it is
/// [`DbId::NONE`]: a database of version 1 or 2) and the entry's number, and (version 3) the
/// metadata checksum the entry recorded.
pub(super) fn load_segment(
    vfs: &dyn Vfs,
    dir: &Path,
    meta: SegmentMeta,
    db_id: DbId,
) -> Result<LoadedSegment> {
    let path = dir.join(names::segment_name(meta.id));
    let map = map_named(vfs, &path, meta.file_len, "segment")?;
    let seg = Segment::open_as(map, &path, db_id.file(meta.id))?;
    if !db_id.is_none() && seg.meta_crc() != meta.meta_crc {
        return Err(Error::corruption(
            &path,
            seg.meta_crc_offset(),
            format!(
                "segment checksum (meta_crc) {:#010x} differs from the manifest's {:#010x} (a \
                 segment of this database's past, or of another one)",
                seg.meta_crc(),
                meta.meta_crc
            ),
        ));
    }
    Ok(LoadedSegment {
        meta,
        seg,
        path,
        cap_ranks: Default::default(),
        size_classes: Default::default(),
    })
}

/// A segment must be of its database's format and shape: a version-2 database's segments
/// are version 2 and store each document's signature (else its documents would have keys but
/// no signature to verify against); a version-1 database's are version 1.
fn check_segment_fits(loaded: &LoadedSegment, manifest: &Manifest) -> Result<()> {
    let params = &manifest.params;
    let seg = &loaded.seg;
    let (want_version, want_record) = match manifest.format_version {
        MANIFEST_V1 => (SEGMENT_FORMAT_V1, 0),
        MANIFEST_V2 => (SEGMENT_FORMAT_V2, params.sig_bytes()),
        _ => (SEGMENT_FORMAT_V3, params.sig_bytes()),
    };
    if seg.format_version() != want_version
        || seg.record_bytes() != want_record
        || seg.num_bands() != params.lsh.bands
        || seg.base_docno() != loaded.meta.base
        || seg.end_docno() != loaded.meta.base + loaded.meta.span
        || seg.stores_sets() != params.store_sets
    {
        let sets = |stored: bool| if stored { ", shingle sets" } else { "" };
        return Err(Error::corruption(
            &loaded.path,
            8,
            format!(
                "segment of version {}, {} bands, {}-byte signatures{}, docnos {}..{} does not \
                 fit the manifest (version {}, {} bands, {}-byte signatures{}, docnos {}..{})",
                seg.format_version(),
                seg.num_bands(),
                seg.record_bytes(),
                sets(seg.stores_sets()),
                seg.base_docno(),
                seg.end_docno(),
                manifest.format_version,
                params.lsh.bands,
                want_record,
                sets(params.store_sets),
                loaded.meta.base,
                loaded.meta.base + loaded.meta.span
            ),
        ));
    }
    let want_keep = manifest.keep.as_ref().map(|k| k.keep_type);
    if manifest.format_version >= MANIFEST_V3 && seg.columns().keep != want_keep {
        return Err(Error::corruption(
            &loaded.path,
            8,
            format!(
                "a segment whose keep values are {} in an index whose keep values are {}",
                seg.columns().keep.map_or("absent", |t| t.name()),
                want_keep.map_or("absent", |t| t.name())
            ),
        ));
    }
    Ok(())
}

/// The manifest's entry `index` must count the documents its segment holds: a count that
/// disagrees is a manifest (or a segment) that is not the one written with the other.
fn check_doc_count(
    loaded: &LoadedSegment,
    manifest: &Manifest,
    dir: &Path,
    index: usize,
) -> Result<()> {
    let (listed, held) = (manifest.segments[index].docs, loaded.seg.doc_count());
    if listed == held {
        return Ok(());
    }
    Err(Error::corruption(
        &manifest_path(dir, manifest),
        ManifestFields::of(manifest).segment_docs(index),
        format!(
            "segment entry {index} ({}) says {listed} documents, the segment holds {held}",
            names::segment_name(loaded.meta.id)
        ),
    ))
}

/// The path of `manifest`'s file in `dir`.
pub(super) fn manifest_path(dir: &Path, manifest: &Manifest) -> PathBuf {
    dir.join(names::manifest_name(manifest.generation))
}

/// Where a manifest's fields lie in its file (`format/manifest.md`), so that a cross-check
/// names the offset of the field it finds wrong. The parameters are of variable length:
/// their encoding is measured.
pub(super) struct ManifestFields {
    version: u32,
    /// Offset of `next_docno`, the first field after the parameters.
    state: u64,
}

impl ManifestFields {
    pub(super) fn of(manifest: &Manifest) -> Self {
        let mut e = Encoder::default();
        let params_at = if manifest.format_version == MANIFEST_V3 {
            manifest.params.to_v3().encode(&mut e);
            PARAMS_AT
        } else {
            manifest.params.encode(&mut e, manifest.format_version);
            // magic, version, generation
            20
        };
        ManifestFields {
            version: manifest.format_version,
            state: params_at + e.buf.len() as u64,
        }
    }

    /// `wal_start` (version 1 has `siglog_records` before it).
    pub(super) fn wal_start(&self) -> u64 {
        self.state + if self.version == MANIFEST_V1 { 16 } else { 8 }
    }

    /// `wal_next_seq` (versions 2 and 3).
    pub(super) fn wal_next_seq(&self) -> u64 {
        self.state + 16
    }

    /// The `docs` field of segment entry `index`.
    pub(super) fn segment_docs(&self, index: usize) -> u64 {
        // next_docno, siglog_records or wal_next_seq, wal_start, next_file_id; the deletion
        // list's fields (version 3: with its CRC); the entry count.
        let (entries, entry_len) = match self.version {
            MANIFEST_V3 => (self.state + 32 + 28 + 4, 44),
            MANIFEST_V1 => (self.state + 32 + 24 + 4, 44),
            _ => (self.state + 32 + 24 + 4, 40),
        };
        // id, base, span, then docs
        entries + index as u64 * entry_len + 24
    }
}

/// Maps the file at `path` (a `what` the manifest names), which must be `file_len` bytes long.
fn map_named(vfs: &dyn Vfs, path: &Path, file_len: u64, what: &str) -> Result<Mapped> {
    let map = vfs.map_readonly(path).map_err(named_file_error(path))?;
    if map.len() as u64 != file_len {
        return Err(Error::corruption(
            path,
            map.len() as u64,
            format!("{what} is {} bytes, manifest says {file_len}", map.len()),
        ));
    }
    Ok(map)
}

/// The error for a file the manifest names that cannot be mapped: missing, it is damage to the
/// database (corruption, at offset 0 of the missing file); anything else is the OS's failure.
fn named_file_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corruption(
                path,
                0,
                "the manifest names this file, but it does not exist",
            )
        } else {
            Error::io(path, "mmap", e)
        }
    }
}
