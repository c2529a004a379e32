//! Export (a compacted, self-contained copy of the live documents, to ship to servers) and
//! merge (combining databases built in parallel from disjoint shards). Both read a snapshot
//! of the source, so writers go on meanwhile, and move documents as bulk inserts: an export
//! one per source segment (memory bounded by the largest segment; the copy is published
//! whole by a rename), a merge one for the whole source (so that it is atomic).

use std::path::{Path, PathBuf};

use super::commit::{CodedSets, Columns, Records};
use super::open::lock_writer;
use super::options::{Durability, Options};
use super::state::State;
use super::{Db, IndexParams};
use crate::sketch::SetDerivation;
use crate::storage::identity::DbId;
use crate::storage::manifest::{Features, MANIFEST_V3};
use crate::storage::names::{self, FileKind};
use crate::storage::segment::{ColumnSet, DocColumns, band_key32};
use crate::storage::vfs::Vfs;
use crate::{Error, Result};

/// Refuses, before anything is merged, a merge whose sources name one database twice, or
/// name the destination: under any name (directories are compared by device and inode, so a
/// symbolic link or a `..` path is caught), or as a copy (databases of format version 3 are
/// compared by identity, which a copy made with `cp -r` shares). A path that does not exist
/// yet (a destination to be created) matches nothing.
pub fn check_merge_sources<P: AsRef<Path>>(
    dest: &Path,
    srcs: impl IntoIterator<Item = P>,
) -> Result<()> {
    let mut seen: Vec<(DirectoryMark, PathBuf)> = Vec::new();
    if let Some(mark) = DirectoryMark::of(dest) {
        seen.push((mark, dest.to_path_buf()));
    }
    for src in srcs {
        let src = src.as_ref();
        let Some(mark) = DirectoryMark::of(src) else {
            continue;
        };
        if let Some((earlier, how)) = seen.iter().find_map(|(m, p)| Some((p, m.same_as(&mark)?))) {
            return Err(merge_twice(dest, src, earlier, how));
        }
        seen.push((mark, src.to_path_buf()));
    }
    Ok(())
}

/// What tells two databases apart: their directory's device and inode, and their identity.
struct DirectoryMark {
    inode: (u64, u64),
    identity: Option<DbId>,
}

impl DirectoryMark {
    /// The mark of the directory at `path`, if there is one (the identity only when it holds
    /// a database of version 3 that can be read; any other is judged by its open).
    fn of(path: &Path) -> Option<DirectoryMark> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(DirectoryMark {
            inode: (m.dev(), m.ino()),
            identity: super::open::stored_identity(path),
        })
    }

    /// How `other` is the same database: `Some(None)` the same directory, `Some(Some(id))` a
    /// copy sharing identity `id`.
    fn same_as(&self, other: &DirectoryMark) -> Option<Option<DbId>> {
        if self.inode == other.inode {
            return Some(None);
        }
        match (self.identity, other.identity) {
            (Some(a), Some(b)) if a == b => Some(Some(a)),
            _ => None,
        }
    }
}

/// The refusal of merging `src`, the same database as `earlier` (the destination or an
/// earlier source), `how` saying whether by identity.
fn merge_twice(dest: &Path, src: &Path, earlier: &Path, how: Option<DbId>) -> Error {
    let detail = match how {
        None => format!(
            "{} is {}: merging a database into itself, or one source twice, would only \
             rewrite its documents; nothing was merged",
            src.display(),
            if earlier == dest {
                "the destination itself".to_string()
            } else {
                format!("the same database as {}", earlier.display())
            }
        ),
        Some(id) => format!(
            "{} and {} share the identity {id}: they are copies of one database (a copy made \
             with cp -r shares its identity; mhdb export makes a copy with its own), and \
             merging one into the other would only rewrite its documents; nothing was merged",
            src.display(),
            earlier.display()
        ),
    };
    Error::invalid("merge source", detail)
}

/// The live documents of one source segment (or of the in-memory tables): keys, `bands` band
/// keys per document, packed signatures.
struct Batch {
    keys: Vec<Vec<u8>>,
    band_keys: Vec<u64>,
    records: Vec<u8>,
    /// The documents' coded shingle sets (indexes that store sets).
    sets: CodedSets,
    /// The documents' column values, one per document (all absent for a source without
    /// columns).
    values: Vec<DocColumns>,
}

impl Db {
    /// Writes the live documents of this database (its WAL tail included) as a new, fully
    /// compacted database in `dest`, which must not exist or be an empty directory. Only live
    /// documents are copied: deleted and replaced ones, and their signature records, stay
    /// behind. Works on a read-only handle and beside a writer (it reads a snapshot). The copy
    /// is built in a directory beside `dest` and renamed into place once it is whole and
    /// durable, so an interrupted export never looks like a database. Damaged source data is
    /// refused, not copied; so is a source reporting a torn WAL tail (what [`Db::verify`]
    /// reports as such), since the tail may have held acknowledged writes, a deletion say,
    /// that the copy would silently lack: [`Db::export_past_damage`] exports it all the same.
    /// A handle whose WAL write failed refuses to export: its memory may hold the write,
    /// which is not committed; reopen the database first.
    pub fn export(&self, dest: impl AsRef<Path>) -> Result<()> {
        if let Some(first) = self.torn_tails_reported()?.into_iter().next() {
            return Err(first);
        }
        self.export_whole(dest.as_ref(), false, false)
    }

    /// [`Db::export`] of a source that reports torn WAL tails, which the copy leaves out
    /// (their bytes are not whole records): returns them, as [`Db::verify`] reports them, for
    /// the caller to tell what was passed over. Damaged segments are still refused. A copy
    /// that passed over damage says so for good ([`Stats::copied_past_damage`](super::Stats)),
    /// so that it is not shipped as a clean one unknowingly.
    pub fn export_past_damage(&self, dest: impl AsRef<Path>) -> Result<Vec<Error>> {
        let skipped = self.torn_tails_reported()?;
        self.export_whole(dest.as_ref(), !skipped.is_empty(), false)?;
        Ok(skipped)
    }

    /// Whether this database is, or descends from, a copy that passed over damage.
    pub(super) fn copied_past_damage(&self) -> bool {
        let state = self.state.read();
        state
            .version
            .manifest
            .features
            .contains(Features::COPIED_PAST_DAMAGE)
    }

    /// The export itself, whatever torn tails the source reports ([`Db::upgrade`] converts
    /// through it as it always has); `past_damage`: it passes over damage (the copy is marked,
    /// as is any copy of a marked database); `drop_sets`: the copy stores no shingle sets.
    /// Sets that are copied keep their derivation, and the copy says which.
    pub(super) fn export_whole(
        &self,
        dest: &Path,
        past_damage: bool,
        drop_sets: bool,
    ) -> Result<()> {
        if self.memory_ahead.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(self.previous_io());
        }
        let vfs = self.vfs.as_ref();
        if vfs.exists(dest).map_err(Error::io_on(dest, "stat"))?
            && !vfs
                .list_dir(dest)
                .map_err(Error::io_on(dest, "list directory"))?
                .is_empty()
        {
            return Err(Error::invalid(
                "dest",
                format!("{} exists and is not empty", dest.display()),
            ));
        }
        let building = building_dir(dest)?;
        remove_interrupted_export(vfs, &building)?;
        let marked = past_damage || self.copied_past_damage();
        let leaking = !drop_sets && self.sets_derivation() == Some(SetDerivation::KeyedV2Leaking);
        // A copy keeps the source's columns; an upgrade (a source of format version 1 or 2)
        // gains EXACT_HASH and SET_SIZE, its documents without values (their texts are not
        // stored), so that what is added afterwards has them.
        let upgrading = self.state.read().version.manifest.format_version < MANIFEST_V3;
        let gains = upgrading && self.params.can_have_exact_hashes();
        let columns = ColumnSet {
            exact: self.columns.exact || gains,
            keep: self.columns.keep,
            set_size: self.columns.set_size || gains,
        };
        // Band filters likewise: a copy keeps the source's choice, an upgrade gains them as a
        // new index does.
        let filters = self.band_filters || upgrading;
        let features = Features::NONE
            .with(Features::COPIED_PAST_DAMAGE, marked)
            .with(Features::SETS_KEYED_V2, leaking)
            .with(Features::BAND_FILTERS, filters);
        let features = super::columns::with_columns(features, columns);
        let params = IndexParams {
            store_sets: self.params.store_sets && !drop_sets,
            ..self.params
        };
        match self.build_export(&building, dest, features, params) {
            Ok(()) => Ok(()),
            Err(e) => {
                // A failed export (a full disk, say) leaves nothing behind, so that it can be
                // run again as it is. (After a crash its directory stays: see above.)
                remove_dir_best_effort(vfs, &building);
                Err(e)
            }
        }
    }

    /// Builds the export, a database of `params` and `features`, in `building`, then renames
    /// it to `dest`.
    fn build_export(
        &self,
        building: &Path,
        dest: &Path,
        features: Features,
        params: IndexParams,
    ) -> Result<()> {
        let vfs = self.vfs.as_ref();
        let snapshot = self.state.read().snapshot();
        let opts = Options {
            durability: Durability::None,
            auto_compact: false,
            ..Options::default()
        };
        let keep = snapshot.version.manifest.keep.clone();
        let copy = super::open::create(self.vfs.clone(), building, params, opts, (features, keep))?;
        let no_sets = CodedSets::default();
        self.for_each_live_batch(&snapshot, |b| {
            let keys: Vec<&[u8]> = b.keys.iter().map(Vec::as_slice).collect();
            let columns = Columns {
                sets: if params.store_sets { &b.sets } else { &no_sets },
                values: if copy.columns.any() { &b.values } else { &[] },
            };
            copy.bulk_insert_prepared(&keys, &b.band_keys, Records::Packed(b.records), columns)
        })?;
        copy.compact_full()?;
        drop(copy);
        // Held until the copy is renamed into place: a run that finds the building directory
        // unlocked takes it for what a killed run left, and removes it.
        let _locks = lock_writer(vfs, building)?;
        // Everything is in the segment now: the copy's WAL holds no record and its lock file
        // guards nothing. A shipped index is its committed files only.
        for name in vfs
            .list_dir(building)
            .map_err(Error::io_on(building, "list directory"))?
        {
            if name == names::LOCK || matches!(names::classify(&name), Some(FileKind::Wal(_))) {
                let path = building.join(&name);
                vfs.remove_file(&path)
                    .map_err(Error::io_on(&path, "remove"))?;
            }
        }
        vfs.sync_dir(building)
            .map_err(Error::io_on(building, "fsync directory"))?;
        vfs.rename(building, dest)
            .map_err(Error::io_on(dest, "rename export into place"))?;
        let parent = parent_dir(dest);
        vfs.sync_dir(&parent)
            .map_err(Error::io_on(&parent, "fsync directory"))
    }

    /// Adds every live document of `src` (same parameters, else [`Error::ParameterMismatch`]).
    /// Keys already present here are replaced by `src`'s copy (merging shards in order makes
    /// the last shard win). Atomic, and durable when this returns. Returns the number of
    /// documents added. `src` being this database itself (under any name, or a copy sharing
    /// its identity) is refused: the merge would rewrite every document as a copy of itself.
    pub fn merge_from(&self, src: &Db) -> Result<u64> {
        check_merge_sources(&self.dir, [&src.dir])?;
        if let Some(id) = self.identity().filter(|id| src.identity() == Some(*id)) {
            return Err(merge_twice(&self.dir, &src.dir, &self.dir, Some(id)));
        }
        self.params.check_mergeable(&src.params)?;
        self.check_same_set_derivation(src)?;
        // One bulk insert: a merge is atomic (all of `src` or, after a crash, none of it).
        let snapshot = src.state.read().snapshot();
        let mut all = Batch::with_capacity(0, self.params.lsh.bands, self.params.sig_bytes());
        src.for_each_live_batch(&snapshot, |b| {
            all.keys.extend(b.keys);
            all.band_keys.extend(b.band_keys);
            all.records.extend(b.records);
            all.sets.append(&b.sets);
            all.values.extend(b.values);
            Ok(())
        })?;
        let keys: Vec<&[u8]> = all.keys.iter().map(Vec::as_slice).collect();
        if keys.is_empty() {
            return Ok(0);
        }
        // The destination's columns decide: a source without one gives documents without a
        // value; a destination without one stores none. Keep values are another field's
        // unless both keep the same one.
        let same_keep = src.keep_column() == self.keep_column();
        let values: Vec<DocColumns> = match self.columns.any() {
            true => all
                .values
                .iter()
                .map(|v| DocColumns {
                    keep: v.keep.clone().filter(|_| same_keep),
                    ..v.clone()
                })
                .map(|v| v.within(self.columns))
                .collect(),
            false => Vec::new(),
        };
        let columns = Columns {
            sets: &all.sets,
            values: &values,
        };
        self.bulk_insert_prepared(&keys, &all.band_keys, Records::Packed(all.records), columns)?;
        Ok(keys.len() as u64)
    }

    /// Errors unless `other`'s stored sets (if any) were derived as this database's are: the
    /// exact Jaccard of two sets of different derivations means nothing (a merge or shards
    /// would compare them).
    pub fn check_same_set_derivation(&self, other: &Db) -> Result<()> {
        let (ours, theirs) = (self.sets_derivation(), other.sets_derivation());
        if ours == theirs {
            return Ok(());
        }
        let describe = |d: Option<SetDerivation>| match d {
            Some(SetDerivation::KeyedV2Leaking) => {
                "keyed sets of version 2's derivation (mhdb upgrade --drop-sets removes them)"
            }
            Some(d) => d.name(),
            None => "none",
        };
        Err(Error::ParameterMismatch {
            name: "sets_derivation",
            stored: describe(ours).into(),
            requested: describe(theirs).into(),
        })
    }

    /// Hands `state`'s live documents to `f`, one batch per segment, then one for the
    /// in-memory tables. A segment's signature records are checked against the manifest's
    /// checksums and its sections against theirs first: damage is refused, never given fresh
    /// checksums in a copy.
    fn for_each_live_batch(
        &self,
        state: &State,
        mut f: impl FnMut(Batch) -> Result<()>,
    ) -> Result<()> {
        let bands = self.params.lsh.bands;
        let record_bytes = self.params.sig_bytes();
        let store_sets = self.params.store_sets;
        let mut scratch = Vec::new();
        let siglog_path = self.dir.join(names::SIGLOG);
        for seg in &state.version.segments {
            seg.seg.verify_checksums()?;
            state
                .version
                .checked_records(&seg.meta, record_bytes, &siglog_path)?;
            // Band keys per document from the band tables (segments store the top 32 bits,
            // which is all a segment ever needs: `key32 << 32` stores the same bits).
            let base = seg.seg.base_docno();
            let span = (seg.seg.end_docno() - base) as usize;
            let mut per_doc = vec![0u64; span * bands];
            for band in 0..bands {
                seg.seg.for_each_posting(band, |k, d| {
                    if let Some(slot) = per_doc.get_mut((d - base) as usize * bands + band) {
                        *slot = u64::from(k) << 32;
                    }
                    Ok(())
                })?;
            }
            let mut batch = Batch::with_capacity(seg.seg.doc_count() as usize, bands, record_bytes);
            for doc in seg.seg.docs() {
                let (d, key) = doc?;
                if state.is_deleted(d) {
                    continue;
                }
                let sig = state.signature_bytes(d, record_bytes)?.ok_or_else(|| {
                    Error::corruption(&seg.path, 0, format!("no signature for {d}"))
                })?;
                let rel = (d - base) as usize;
                batch.keys.push(key.to_vec());
                batch.band_keys.extend_from_slice(
                    per_doc
                        .get(rel * bands..(rel + 1) * bands)
                        .unwrap_or_default(),
                );
                batch.records.extend_from_slice(sig);
                if store_sets {
                    // Decoded as a check: damage is refused, never exported.
                    batch
                        .sets
                        .push(seg.seg.checked_set_of(d, &mut scratch)?.unwrap_or_default());
                }
                batch.values.push(seg.seg.columns_of(d)?);
            }
            if !batch.keys.is_empty() {
                f(batch)?;
            }
        }
        let mut batch = Batch::with_capacity(0, bands, record_bytes);
        for table in state.imm.iter().map(|t| t.as_ref()).chain([&state.mem]) {
            for (d, doc) in table.live_docs() {
                if state.is_deleted(d) {
                    continue;
                }
                batch.keys.push(doc.key.to_vec());
                batch.band_keys.extend(
                    doc.band_keys
                        .iter()
                        .map(|&k| u64::from(band_key32(k)) << 32),
                );
                batch.records.extend_from_slice(doc.sig);
                if store_sets {
                    batch.sets.push(doc.set);
                }
                batch.values.push(doc.columns);
            }
        }
        if !batch.keys.is_empty() {
            f(batch)?;
        }
        Ok(())
    }
}

impl Batch {
    fn with_capacity(docs: usize, bands: usize, record_bytes: usize) -> Self {
        Batch {
            keys: Vec::with_capacity(docs),
            band_keys: Vec::with_capacity(docs * bands),
            records: Vec::with_capacity(docs * record_bytes),
            sets: CodedSets::default(),
            values: Vec::with_capacity(docs),
        }
    }
}

/// Removes what an export killed while building in `building` left, so that the next export
/// needs no manual step. A building directory still locked is an export running: refused
/// ([`Error::Locked`]), untouched.
fn remove_interrupted_export(vfs: &dyn Vfs, building: &Path) -> Result<()> {
    if !vfs
        .exists(building)
        .map_err(Error::io_on(building, "stat"))?
    {
        return Ok(());
    }
    let locks = lock_writer(vfs, building)?;
    remove_dir_best_effort(vfs, building);
    drop(locks);
    if vfs
        .exists(building)
        .map_err(Error::io_on(building, "stat"))?
    {
        // Its error says why it could not be removed.
        vfs.remove_dir(building).map_err(Error::io_on(
            building,
            "remove the directory an interrupted export left",
        ))?;
    }
    Ok(())
}

/// Where an export to `dest` is built: a hidden directory beside it, on the same filesystem,
/// so that the final rename is atomic.
fn building_dir(dest: &Path) -> Result<PathBuf> {
    let name = dest.file_name().ok_or_else(|| {
        Error::invalid(
            "dest",
            format!("{} does not name a directory", dest.display()),
        )
    })?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(".mhdb-export");
    Ok(dest.with_file_name(hidden))
}

pub(super) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Removes a directory of files (an unfinished export), ignoring failures.
pub(super) fn remove_dir_best_effort(vfs: &dyn Vfs, dir: &Path) {
    if let Ok(names) = vfs.list_dir(dir) {
        for name in names {
            let _ = vfs.remove_file(&dir.join(name));
        }
    }
    let _ = vfs.remove_dir(dir);
}
