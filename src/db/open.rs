//! Create and open, with recovery broken into the named steps of `format/commit.md` ("Open"):
//! a writer locks the directory; then CURRENT and the manifest it pins are read (a version-1
//! database is refused to writers, and its signature log checked for readers), the committed
//! files mapped and the WAL replayed into a fresh in-memory table (a writer cuts a torn tail,
//! keeping it aside when it is not all zeros, and seals each replayed file); then a writer
//! starts a new WAL file and removes files the manifest no longer names.
//!
//! A reader takes no lock and writes nothing. A writer in another process may meanwhile
//! publish a new manifest and remove files the old one named, or start a new WAL file: what a
//! reader finds missing or inconsistent is judged against a fresh read of CURRENT and of the
//! WAL files, and the read is retried when they changed (`format/commit.md`, "Readers").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Mutex, RwLock};

use super::Db;
use super::commit::write_manifest;
use super::group_commit::GroupCommit;
use super::identity::identity_for_new_database;
use super::kind::Sketcher;
use super::memtable::MemTable;
use super::options::Options;
use super::params::IndexParams;
use super::replay::{CutTail, Replayed, replay_wal};
use super::rerank::set_derivation;
use super::state::State;
use super::version::Version;
use super::version::{Manifest, ManifestFields, load_version, manifest_path};
use crate::sketch::SecretKey;
use crate::storage::identity::DbId;
use crate::storage::manifest::{Current, DeletionsMeta, Features, MANIFEST_V1, MANIFEST_VERSION};
use crate::storage::names::{self, FileKind};
use crate::storage::segment::KeepColumn;
use crate::storage::siglog;
use crate::storage::vfs::{LockHeld, LockHolder, LockMode, OpenMode, Vfs, VfsLock, read_file};
use crate::storage::wal::{WalReader, WalWriter};
use crate::{Error, Result};

/// Creates a new database in `dir` (which must not hold one already), then opens it.
pub(super) fn create(
    vfs: Arc<dyn Vfs>,
    dir: &Path,
    mut params: IndexParams,
    opts: Options,
    (features, keep): (Features, Option<KeepColumn>),
) -> Result<Db> {
    params.validate()?;
    if let Some(key) = &opts.key {
        // A keyed index: shingles are hashed under the key; the manifest keeps its
        // fingerprint. (Parameters that carry a fingerprint already, an export's or a
        // merge's, must name this key.)
        if !params.key_fingerprint.is_unkeyed() {
            params.key_fingerprint.check(Some(key))?;
        }
        params.key_fingerprint = key.fingerprint();
    }
    vfs.create_dir_all(dir)
        .map_err(Error::io_on(dir, "create directory"))?;
    check_creatable(vfs.as_ref(), dir)?;
    let lock = lock_writer(vfs.as_ref(), dir)?;
    let current = dir.join(names::CURRENT);
    if vfs
        .exists(&current)
        .map_err(Error::io_on(&current, "stat"))?
    {
        return Err(already_a_database(dir));
    }
    let (db_id, _) = identity_for_new_database(opts.identity)?;
    let wal = dir.join(names::wal_name(1));
    // One left by an interrupted create holds no record (nothing is written to a WAL before
    // CURRENT exists) and carries that attempt's identity: replaced.
    if vfs.exists(&wal).map_err(Error::io_on(&wal, "stat"))? {
        vfs.remove_file(&wal).map_err(Error::io_on(
            &wal,
            "remove a WAL an interrupted create left",
        ))?;
    }
    WalWriter::create(vfs.as_ref(), &wal, 1, db_id.file(1))?;
    let manifest = Manifest {
        format_version: MANIFEST_VERSION,
        generation: 1,
        db_id,
        features,
        params,
        keep,
        next_docno: 0,
        siglog_records: 0,
        wal_start: 1,
        wal_next_seq: 1,
        next_file_id: 2,
        deletions: DeletionsMeta::default(),
        segments: Vec::new(),
    };
    write_manifest(vfs.as_ref(), dir, &manifest)?;
    drop(lock);
    open(vfs, dir, opts, false)
}

/// Errors unless `dir` may receive a new database. Leftovers of an interrupted create (no
/// CURRENT yet) are ours to replace; anything else is someone else's, and a new database does
/// not adopt it. Checked before the lock, which would add a file; CURRENT is checked again
/// under it.
fn check_creatable(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let listing = vfs
        .list_dir(dir)
        .map_err(Error::io_on(dir, "list directory"))?;
    if listing.iter().any(|n| n == names::CURRENT) {
        return Err(already_a_database(dir));
    }
    if let Some(other) = listing.iter().find(|n| {
        !(n.as_str() == names::LOCK
            || n.as_str() == names::SIGLOG
            || matches!(
                names::classify(n),
                Some(FileKind::Wal(_) | FileKind::Manifest(_) | FileKind::CurrentTmp)
            ))
    }) {
        return Err(Error::invalid(
            "path",
            format!(
                "{} is not empty (it holds {other}): create needs a missing or empty directory",
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn already_a_database(dir: &Path) -> Error {
    Error::invalid(
        "path",
        format!("{} already holds an mhdb database", dir.display()),
    )
}

/// Opens the database in `dir` and recovers its committed state.
pub(super) fn open(vfs: Arc<dyn Vfs>, dir: &Path, opts: Options, read_only: bool) -> Result<Db> {
    let dir = dir.to_path_buf();
    let current_path = dir.join(names::CURRENT);
    if !vfs
        .exists(&current_path)
        .map_err(Error::io_on(&current_path, "stat"))?
    {
        return Err(Error::NotFound { path: dir });
    }
    let locks = if read_only {
        Vec::new()
    } else {
        lock_writer(vfs.as_ref(), &dir)?
    };
    let committed = if read_only {
        read_consistent(vfs.as_ref(), &dir, None)?
    } else {
        read_committed(vfs.as_ref(), &dir, false, None)?
    };
    let db = handle(vfs, dir, opts, read_only, locks, committed)?;
    if !read_only {
        db.remove_obsolete_files_at(true)?;
    }
    Ok(db)
}

/// The handle on the `committed` state of the database in `dir`, opened with `opts` (a
/// writer's: holding `locks`, writing to a new WAL file).
fn handle(
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    opts: Options,
    read_only: bool,
    locks: Vec<Box<dyn VfsLock>>,
    committed: Committed,
) -> Result<Db> {
    let Committed {
        version,
        mem,
        last_seq,
        listing,
        cut_tails,
    } = committed;
    let params = version.manifest.params;
    let db_id = version.manifest.db_id;
    if let Some(expected) = &opts.expect_sketch {
        params.check_compatible(expected)?;
    }
    let columns =
        super::columns::column_set(version.manifest.features, version.manifest.keep.as_ref());
    let band_filters = version.manifest.features.contains(Features::BAND_FILTERS);
    let sketcher = Sketcher::new(&params, &opts, set_derivation(&version.manifest), columns)?;
    let next_file_id = AtomicU64::new(next_file_id(&listing, &version));
    let group_commit = if read_only {
        GroupCommit::read_only()
    } else {
        start_wal(vfs.as_ref(), &dir, &next_file_id, last_seq, db_id)?
    };
    let state = RwLock::new(State {
        mem,
        imm: None,
        version: Arc::new(version),
    });
    Ok(Db {
        dir,
        vfs,
        opts,
        params,
        sketcher,
        columns,
        band_filters,
        exact_seen: Mutex::default(),
        read_only,
        _locks: locks,
        state,
        sequencer: Mutex::new(()),
        group_commit,
        maintenance: Mutex::new(()),
        next_file_id,
        db_id,
        failed: AtomicBool::new(false),
        failure: parking_lot::Mutex::new(None),
        memory_ahead: AtomicBool::new(false),
        cut_tails,
    })
}

/// The key an index's text is signed under.
pub(in crate::db) enum TextKey {
    /// An unkeyed index: text is signed without a key.
    Unkeyed,
    /// A keyed index, and its key (checked against the stored fingerprint).
    Keyed(SecretKey),
    /// A keyed index opened without its key: text cannot be signed.
    Missing,
}

impl TextKey {
    /// The signer `make` builds under this key (`None` for an unkeyed index); `None` when the
    /// key is missing.
    pub(in crate::db) fn signer<T>(
        self,
        make: impl FnOnce(Option<&SecretKey>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self {
            TextKey::Unkeyed => make(None).map(Some),
            TextKey::Keyed(key) => make(Some(&key)).map(Some),
            TextKey::Missing => Ok(None),
        }
    }
}

/// The key text is signed under: for an unkeyed index none (a key given for it is a mistake,
/// refused); for a keyed one, the key of `opts` (or of the file `MHDB_KEY_FILE` names), checked
/// against the stored fingerprint, or [`TextKey::Missing`] when there is no key at all.
pub(in crate::db) fn text_key(params: &IndexParams, opts: &Options) -> Result<TextKey> {
    if params.key_fingerprint.is_unkeyed() {
        params.key_fingerprint.check(opts.key.as_ref())?;
        return Ok(TextKey::Unkeyed);
    }
    let key = match &opts.key {
        Some(key) => Some(key.clone()),
        None => SecretKey::from_env()?,
    };
    match key {
        Some(key) => {
            params.key_fingerprint.check(Some(&key))?;
            Ok(TextKey::Keyed(key))
        }
        None => Ok(TextKey::Missing),
    }
}

/// The writer's locks: the directory itself, which no deletion can steal and whose holder the
/// kernel forgets when it dies; and, for mhdb versions that lock only the `LOCK` file, that
/// file too. Readers take no lock.
pub(super) fn lock_writer(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<Box<dyn VfsLock>>> {
    let mut locks = Vec::with_capacity(2);
    for path in [dir.to_path_buf(), dir.join(names::LOCK)] {
        let lock = vfs.lock(&path, LockMode::Exclusive).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::WouldBlock => Error::Locked {
                    path: path.clone(),
                    holder: e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<LockHeld>())
                        .map_or(LockHolder::Unknown, |held| held.0),
                },
                // A shipped read-only copy: say what still works.
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    Error::io(
                        &path,
                        "lock for writing (this copy is not writable: commands that only read \
                         it, such as query, stats, verify and export, work)",
                        e,
                    )
                }
                _ => Error::io(&path, "lock", e),
            }
        })?;
        locks.push(lock);
    }
    Ok(locks)
}

/// What recovery finds: the committed files, the WAL replayed on top of them, and the
/// directory listing it worked from.
pub(super) struct Committed {
    pub(super) version: Version,
    pub(super) mem: MemTable,
    /// Sequence number of the last WAL record replayed.
    pub(super) last_seq: u64,
    pub(super) listing: Vec<String>,
    /// Torn WAL tails that were not all zeros, cut by this (writer's) recovery.
    pub(super) cut_tails: Vec<CutTail>,
}

/// How often a reader starts over because a writer changed the database under it.
const READ_ATTEMPTS: usize = 32;

/// A reader's view of the committed state: [`read_committed`], retried while a writer in
/// another process changes CURRENT or the WAL files under it. An error stands only when both
/// are as they were when the attempt began: then it is the database's, not the race's.
/// `previous` lends its mapped segments to the new version.
pub(super) fn read_consistent(
    vfs: &dyn Vfs,
    dir: &Path,
    previous: Option<&Version>,
) -> Result<Committed> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = writer_marks(vfs, dir)?;
        match read_committed(vfs, dir, true, previous) {
            Ok(committed) => return Ok(committed),
            Err(_) if attempt < READ_ATTEMPTS && writer_marks(vfs, dir).ok() != Some(before) => {}
            Err(e) => return Err(e),
        }
    }
}

/// What a writer changes when it moves the database on.
#[derive(Debug, PartialEq, Eq)]
struct WriterMarks {
    /// CURRENT's bytes (none when it cannot be read).
    current: Option<Vec<u8>>,
    /// The names of the WAL files.
    wal_files: Vec<String>,
}

fn writer_marks(vfs: &dyn Vfs, dir: &Path) -> Result<WriterMarks> {
    let current = read_file(vfs, &dir.join(names::CURRENT)).ok();
    let wal_files = vfs
        .list_dir(dir)
        .map_err(Error::io_on(dir, "list directory"))?
        .into_iter()
        .filter(|n| matches!(names::classify(n), Some(FileKind::Wal(_))))
        .collect();
    Ok(WriterMarks { current, wal_files })
}

/// Recovery's reading steps: the manifest CURRENT names (version 1: and its signature log), the committed
/// files (reusing `previous`'s mapped segments), and the WAL replayed on top.
fn read_committed(
    vfs: &dyn Vfs,
    dir: &Path,
    read_only: bool,
    previous: Option<&Version>,
) -> Result<Committed> {
    let manifest = read_manifest(vfs, dir)?;
    // Versions 1 and 2 are read, never written: their files carry no identity.
    if manifest.format_version != MANIFEST_VERSION && !read_only {
        return Err(Error::NeedsUpgrade {
            path: dir.to_path_buf(),
            found: manifest.format_version,
        });
    }
    if manifest.format_version == MANIFEST_V1 {
        // Its signatures are in the signature log.
        check_signature_log(vfs, dir, &manifest)?;
    }
    let version = match previous {
        Some(p) => p.successor(vfs, dir, manifest, None)?,
        None => load_version(vfs, dir, manifest)?,
    };
    let listing = vfs
        .list_dir(dir)
        .map_err(Error::io_on(dir, "list directory"))?;
    check_wal_fields(vfs, dir, &listing, &version.manifest)?;
    let Replayed {
        mem,
        last_seq,
        cut_tails,
    } = replay_wal(vfs, dir, &listing, &version, read_only)?;
    Ok(Committed {
        version,
        mem,
        last_seq,
        listing,
        cut_tails,
    })
}

/// The manifest's WAL fields against its counter and the WAL files present, even when no
/// WAL is replayed (`format/manifest.md`): `wal_start` at most `next_file_id`, `wal_next_seq`
/// at least 1, and no WAL file below `wal_start` holding a batch record numbered
/// `wal_next_seq` or more: such a manifest would skip records it never folded in, and the
/// next writer would delete them. (The first WAL file from `wal_start` on must start at
/// `wal_next_seq`: the replay checks that.) Version 1 numbers its records otherwise and has
/// no `wal_next_seq`: only its `wal_start` is checked.
fn check_wal_fields(vfs: &dyn Vfs, dir: &Path, listing: &[String], m: &Manifest) -> Result<()> {
    let (path, fields) = (manifest_path(dir, m), ManifestFields::of(m));
    if m.wal_start > m.next_file_id {
        return Err(Error::corruption(
            &path,
            fields.wal_start(),
            format!(
                "wal_start {} is past next_file_id {}: no WAL file of that number was made",
                m.wal_start, m.next_file_id
            ),
        ));
    }
    if m.format_version == MANIFEST_V1 {
        return Ok(());
    }
    if m.wal_next_seq == 0 {
        return Err(Error::corruption(
            &path,
            fields.wal_next_seq(),
            "wal_next_seq is 0, but WAL records are numbered from 1",
        ));
    }
    for name in listing {
        if let Some(FileKind::Wal(id)) = names::classify(name)
            && id < m.wal_start
        {
            check_folded_wal(vfs, &dir.join(name), id, m, &path, fields.wal_start())?;
        }
    }
    Ok(())
}

/// A WAL file below `wal_start` (left by a crash between a commit and its clean-up) must hold
/// only records numbered below `wal_next_seq`, those the manifest folded in; else the error
/// names the manifest's `wal_start` (at `wal_start_at` of `manifest_path`). The file is
/// obsolete otherwise: gone meanwhile (a writer removed it) or damaged, it is not read further.
/// An intact header must still carry this database's identity and the file's number: a file
/// from elsewhere is not a leftover of this database.
fn check_folded_wal(
    vfs: &dyn Vfs,
    wal: &Path,
    id: u64,
    m: &Manifest,
    manifest_path: &Path,
    wal_start_at: u64,
) -> Result<()> {
    let identity = m.db_id.file(id);
    match WalReader::check_header(vfs, wal, identity) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(());
        }
        checked => checked?,
    }
    let read = WalReader::replay(vfs, wal, identity, |seq, offset, _| {
        if seq < m.wal_next_seq {
            return Ok(());
        }
        Err(Error::corruption(
            manifest_path,
            wal_start_at,
            format!(
                "wal_start {} leaves out {}, whose record {seq} (at offset {offset}) is not \
                 folded in (wal_next_seq {}): the manifest would skip it",
                m.wal_start,
                wal.display(),
                m.wal_next_seq
            ),
        ))
    });
    match read {
        Ok(_) => Ok(()),
        Err(Error::Corruption { path, .. }) if path != manifest_path => Ok(()),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The identity of the database in `dir`, read from its manifest: `None` when there is none
/// to read (no database, one of version 1 or 2, or one that does not open: its open says why).
pub(super) fn stored_identity(dir: &Path) -> Option<DbId> {
    let manifest = read_manifest(&crate::storage::vfs::StdFs, dir).ok()?;
    (!manifest.db_id.is_none()).then_some(manifest.db_id)
}

/// CURRENT, then the manifest it names, checked against CURRENT's pin of its length and
/// checksum.
fn read_manifest(vfs: &dyn Vfs, dir: &Path) -> Result<Manifest> {
    let current_path = dir.join(names::CURRENT);
    let current = Current::decode(&read_file(vfs, &current_path)?, &current_path)?;
    let manifest_path = dir.join(names::manifest_name(current.generation));
    let manifest_bytes = read_file(vfs, &manifest_path).map_err(|e| match e {
        // CURRENT names it: a missing manifest is damage, not an I/O failure.
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::corruption(
                &manifest_path,
                0,
                "CURRENT names this manifest, but it does not exist",
            )
        }
        e => e,
    })?;
    current.check(&manifest_bytes, &manifest_path)?;
    let manifest = Manifest::decode(&manifest_bytes, &manifest_path)?;
    if manifest.format_version != current.version {
        return Err(Error::corruption(
            &current_path,
            8,
            format!(
                "CURRENT is of format version {}, the manifest it names of version {}",
                current.version, manifest.format_version
            ),
        ));
    }
    Ok(manifest)
}

/// Checks a version-1 database's signature log (read-only: version 1 is never written): its
/// header against the parameters, and that it holds at least the committed records (a longer
/// tail is an interrupted flush, which readers ignore).
fn check_signature_log(vfs: &dyn Vfs, dir: &Path, manifest: &Manifest) -> Result<()> {
    let params = &manifest.params;
    let record_bytes = params.sig_bytes();
    let path = dir.join(names::SIGLOG);
    let file = vfs
        .open(&path, OpenMode::Read)
        .map_err(Error::io_on(&path, "open"))?;
    let len = file.len().map_err(Error::io_on(&path, "stat"))?;
    if len < siglog::HEADER_LEN {
        return Err(Error::corruption(
            &path,
            len,
            "signature log is shorter than its header",
        ));
    }
    let mut header = vec![0u8; siglog::HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0)
        .map_err(Error::io_on(&path, "read"))?;
    siglog::check_header(
        &header,
        &path,
        params.sketch.num_perm as u32,
        params.bits,
        record_bytes as u32,
    )?;
    let committed_len = siglog::offset(manifest.siglog_records, record_bytes);
    if len < committed_len {
        return Err(Error::corruption(
            &path,
            len,
            format!(
                "signature log ends at {len} but {} committed records need {committed_len} bytes",
                manifest.siglog_records
            ),
        ));
    }
    Ok(())
}

/// The next unused file id: past the manifest's counter and past every file present (an
/// interrupted write may have used ids the durable manifest never recorded).
fn next_file_id(listing: &[String], version: &Version) -> u64 {
    let mut next = version.manifest.next_file_id;
    for name in listing {
        if let Some(
            FileKind::Wal(id)
            | FileKind::Segment(id)
            | FileKind::Deletions(id)
            | FileKind::Manifest(id),
        ) = names::classify(name)
        {
            next = next.max(id + 1);
        }
    }
    next
}

/// A writer's new WAL file; the replayed ones stay until the next flush.
fn start_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    next_file_id: &AtomicU64,
    last_seq: u64,
    db_id: DbId,
) -> Result<GroupCommit> {
    let id = next_file_id.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = dir.join(names::wal_name(id));
    let writer = WalWriter::create(vfs, &path, last_seq + 1, db_id.file(id))?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))?;
    Ok(GroupCommit::new(id, writer, last_seq))
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
