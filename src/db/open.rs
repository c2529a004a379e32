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
use super::memtable::MemTable;
use super::options::Options;
use super::params::IndexParams;
use super::simhash::BandKeys;
use super::state::State;
use super::version::Version;
use super::version::{Manifest, load_version};
use crate::sketch::{MinHasher, SecretKey};
use crate::storage::manifest::{Current, DeletionsMeta, MANIFEST_V1, MANIFEST_VERSION};
use crate::storage::names::{self, FileKind};
use crate::storage::siglog;
use crate::storage::vfs::{LockMode, OpenMode, Vfs, VfsLock, read_file};
use crate::storage::wal::batch::{OpRef, band_keys_le, decode_ops};
use crate::storage::wal::{Replay, WAL_V1_HEADER_LEN, WalReader, WalWriter};
use crate::{Error, Result};

/// Creates a new database in `dir` (which must not hold one already), then opens it.
pub(super) fn create(
    vfs: Arc<dyn Vfs>,
    dir: &Path,
    mut params: IndexParams,
    opts: Options,
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
    WalWriter::create(vfs.as_ref(), &dir.join(names::wal_name(1)), 1)?;
    let manifest = Manifest {
        format_version: MANIFEST_VERSION,
        generation: 1,
        params,
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
    if let Some(expected) = &opts.expect_sketch {
        params.check_compatible(expected)?;
    }
    let hasher = text_hasher(&params, &opts)?;
    let simhasher = super::simhash::text_simhasher(&params, &opts)?;
    let banding = BandKeys::new(&params)?;
    let next_file_id = AtomicU64::new(next_file_id(&listing, &version));
    let group_commit = if read_only {
        GroupCommit::read_only()
    } else {
        start_wal(vfs.as_ref(), &dir, &next_file_id, last_seq)?
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
        hasher,
        simhasher,
        banding,
        read_only,
        _locks: locks,
        state,
        sequencer: Mutex::new(()),
        group_commit,
        maintenance: Mutex::new(()),
        next_file_id,
        failed: AtomicBool::new(false),
        failure: parking_lot::Mutex::new(None),
        memory_ahead: AtomicBool::new(false),
        cut_tails,
    })
}

/// The text signer of a MinHash index: none for signatures made elsewhere (or a SimHash
/// index); for a keyed index, one under the key [`text_key`] finds, or none without one (text
/// is then refused, saying why; signature queries still work).
fn text_hasher(params: &IndexParams, opts: &Options) -> Result<Option<MinHasher>> {
    if params.sim_params().is_some() || !params.sketch.scheme.signs_text() {
        return Ok(None);
    }
    text_key(params, opts)?.signer(|key| MinHasher::with_key(params.sketch, key))
}

/// The key an index's text is signed under.
pub(super) enum TextKey {
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
    pub(super) fn signer<T>(
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
pub(super) fn text_key(params: &IndexParams, opts: &Options) -> Result<TextKey> {
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
                std::io::ErrorKind::WouldBlock => Error::Locked { path: path.clone() },
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
    if manifest.format_version == MANIFEST_V1 {
        // Version 1 is read (its signatures are in the signature log), never written.
        if !read_only {
            return Err(Error::NeedsUpgrade {
                path: dir.to_path_buf(),
                found: MANIFEST_V1,
            });
        }
        check_signature_log(vfs, dir, &manifest)?;
    }
    let version = match previous {
        Some(p) => p.successor(vfs, dir, manifest, None)?,
        None => load_version(vfs, dir, manifest)?,
    };
    let listing = vfs
        .list_dir(dir)
        .map_err(Error::io_on(dir, "list directory"))?;
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

/// What replaying the WAL gives: the in-memory table of the documents and deletions the
/// manifest does not cover, the last record's sequence number, and the torn tails cut (a
/// writer) or found (a reader).
struct Replayed {
    mem: MemTable,
    last_seq: u64,
    cut_tails: Vec<CutTail>,
}

/// Replays the WAL files the manifest does not cover, in order, into a fresh in-memory table.
fn replay_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    listing: &[String],
    version: &Version,
    read_only: bool,
) -> Result<Replayed> {
    let wal_files = wal_files(dir, listing, version.manifest.wal_start);
    let rules = WalRules::of(&version.manifest);
    let mut replay = WalReplay {
        vfs,
        dir,
        params: &version.manifest.params,
        rules,
        read_only,
        mem: memtable_for(vfs, &wal_files, version)?,
        last_seq: rules.last_seq_before(&version.manifest),
        cut_tails: Vec::new(),
    };
    for (i, (id, path)) in wal_files.iter().enumerate() {
        replay.file(*id, path, i + 1 == wal_files.len())?;
    }
    replay.mem.build_deferred_buckets();
    Ok(Replayed {
        mem: replay.mem,
        last_seq: replay.last_seq,
        cut_tails: replay.cut_tails,
    })
}

/// The WAL files from id `wal_start` on, as (id, path), oldest first.
fn wal_files(dir: &Path, listing: &[String], wal_start: u64) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = listing
        .iter()
        .filter_map(|n| match names::classify(n) {
            Some(FileKind::Wal(id)) if id >= wal_start => Some((id, dir.join(names::wal_name(id)))),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    files
}

/// A fresh in-memory table for the documents of `wal_files`: sized for the WAL's inserts (each
/// logs at least its band keys and signature), its band buckets built once at the end.
fn memtable_for(
    vfs: &dyn Vfs,
    wal_files: &[(u64, PathBuf)],
    version: &Version,
) -> Result<MemTable> {
    let params = &version.manifest.params;
    let (bands, record_bytes) = (params.lsh.bands, params.sig_bytes());
    let mut mem = MemTable::new(version.manifest.next_docno, bands, record_bytes);
    let mut wal_bytes = 0u64;
    for (_, path) in wal_files {
        let file = vfs
            .open(path, OpenMode::Read)
            .map_err(Error::io_on(path, "open"))?;
        wal_bytes += file.len().map_err(Error::io_on(path, "stat"))?;
    }
    let min_insert_bytes = (record_bytes + bands * 8) as u64;
    mem.reserve(usize::try_from(wal_bytes / min_insert_bytes).unwrap_or(0));
    mem.defer_buckets();
    Ok(mem)
}

/// How a database's format version numbers WAL records across files, and what it requires
/// of a file that is not the newest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WalRules {
    /// Version 1: a file that follows one with records continues its numbering; files have no
    /// header numbering and no seal.
    V1,
    /// Version 2: numbers run on across files from the manifest's `wal_next_seq`: the first
    /// WAL file starts there, each next one where the previous ended (its header says where
    /// it starts), and every file but the newest ends with a seal.
    V2,
}

impl WalRules {
    fn of(manifest: &Manifest) -> Self {
        if manifest.format_version == MANIFEST_V1 {
            WalRules::V1
        } else {
            WalRules::V2
        }
    }

    /// The sequence number the first WAL file's records follow.
    fn last_seq_before(self, manifest: &Manifest) -> u64 {
        match self {
            WalRules::V1 => 0,
            WalRules::V2 => manifest.wal_next_seq.saturating_sub(1),
        }
    }

    /// Checks the first record of a file (number `seq`, at `offset`) against `last_seq`, where
    /// the files before it ended. Sequence numbers continue from one WAL file to the next: a
    /// gap means an older file lost its end (e.g. was truncated at a record boundary).
    fn check_first_record(self, path: &Path, offset: u64, seq: u64, last_seq: u64) -> Result<()> {
        match self {
            WalRules::V2 if seq != last_seq + 1 => Err(wal_gap(path, offset, seq, last_seq + 1)),
            WalRules::V1 if last_seq > 0 && seq != last_seq + 1 => Err(Error::corruption(
                path,
                offset,
                format!(
                    "WAL starts at record {seq}, but the previous WAL file ended at {last_seq}"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Where the numbering stands after record `seq` (version 2 takes it from the file once
    /// the file is replayed: [`WalRules::after_file`]).
    fn after_record(self, last_seq: u64, seq: u64) -> u64 {
        match self {
            WalRules::V1 => last_seq.max(seq),
            WalRules::V2 => last_seq,
        }
    }

    /// Checks a replayed file's header and end against the numbering (`last_seq` where the
    /// files before it ended); returns where the numbering stands after it.
    fn after_file(
        self,
        path: &Path,
        replay: &Replay,
        last_seq: u64,
        is_newest: bool,
    ) -> Result<u64> {
        // (A version-2 file cut off while its header was being written has no numbering.)
        if self == WalRules::V1 || replay.version == 0 {
            return Ok(last_seq);
        }
        if replay.version == 1 {
            return Err(Error::corruption(
                path,
                8,
                "a version-1 WAL file in a version-2 database",
            ));
        }
        if replay.first_seq != last_seq + 1 {
            // (A file without records; one with records was judged at its first record.)
            return Err(wal_gap(path, 12, replay.first_seq, last_seq + 1));
        }
        if !is_newest && !replay.sealed {
            return Err(Error::corruption(
                path,
                replay.valid_len,
                "a WAL file that is not the newest ends without its seal (its end was lost)",
            ));
        }
        Ok(replay.last_seq)
    }
}

/// The WAL replay in progress: the table it fills and where the numbering stands.
struct WalReplay<'a> {
    vfs: &'a dyn Vfs,
    dir: &'a Path,
    params: &'a IndexParams,
    rules: WalRules,
    read_only: bool,
    mem: MemTable,
    /// Sequence number of the last record replayed.
    last_seq: u64,
    cut_tails: Vec<CutTail>,
}

impl WalReplay<'_> {
    /// Replays WAL file `id` at `path` (the newest one when `is_newest`), checks its end, and
    /// settles its torn tail.
    fn file(&mut self, id: u64, path: &Path, is_newest: bool) -> Result<()> {
        let replay = self.records(path)?;
        self.last_seq = self
            .rules
            .after_file(path, &replay, self.last_seq, is_newest)?;
        if replay.torn_tail_bytes > 0 && !is_newest {
            let what = if replay.sealed {
                "bytes after the seal of a WAL file that is not the newest"
            } else {
                "torn record in a WAL file that is not the newest"
            };
            return Err(Error::corruption(path, replay.valid_len, what));
        }
        if !self.read_only {
            let cut = settle_replayed_wal(self.vfs, self.dir, id, path, &replay)?;
            self.cut_tails.extend(cut);
        } else if replay.torn_tail_bytes > 0 {
            // Readers change no byte, but a torn tail that a writer's open would keep aside is
            // reported all the same: a live writer never shows one (it writes zeros ahead of a
            // record and the record's checksum last), so it is a crash's or damage.
            if let Some(kept) = torn_tail_to_keep(self.vfs, path, replay.valid_len)? {
                self.cut_tails.push(CutTail {
                    wal: path.to_path_buf(),
                    offset: replay.valid_len,
                    bytes: kept.len() as u64,
                    kept_in: self.dir.join(names::torn_tail_name(id, replay.valid_len)),
                });
            }
        }
        Ok(())
    }

    /// Applies the records of the WAL file at `path` to the table.
    fn records(&mut self, path: &Path) -> Result<Replay> {
        let (rules, params) = (self.rules, self.params);
        let (mem, last_seq) = (&mut self.mem, &mut self.last_seq);
        let mut first_in_file = true;
        WalReader::replay(self.vfs, path, |seq, offset, payload| {
            if first_in_file {
                rules.check_first_record(path, offset, seq, *last_seq)?;
                first_in_file = false;
            }
            apply_record(mem, params, path, offset, payload)?;
            *last_seq = rules.after_record(*last_seq, seq);
            Ok(())
        })
    }
}

/// Applies the operations of the WAL record at `offset` of `path` (its payload `payload`) to
/// `mem`.
fn apply_record(
    mem: &mut MemTable,
    params: &IndexParams,
    path: &Path,
    offset: u64,
    payload: &[u8],
) -> Result<()> {
    // `offset` is the record's; its payload (what the decoder's errors locate within) starts
    // after the record header.
    let payload_offset = offset + crate::storage::wal::RECORD_HEADER_LEN as u64;
    let (bands, record_bytes) = (params.lsh.bands, params.sig_bytes());
    decode_ops(
        payload,
        bands,
        record_bytes,
        params.store_sets,
        path,
        payload_offset,
        |op| match op {
            OpRef::Insert {
                docno,
                key,
                band_keys,
                sig,
                set,
            } => {
                if mem.insert(docno, key, band_keys_le(band_keys), sig, set) {
                    Ok(())
                } else {
                    Err(Error::corruption(
                        path,
                        offset,
                        format!(
                            "WAL insert of document {docno} does not continue the numbering at {}",
                            mem.next_docno()
                        ),
                    ))
                }
            }
            OpRef::Delete { docno } => {
                mem.mark_deleted(docno);
                Ok(())
            }
        },
    )
}

/// A WAL file that does not start where the numbering says the next one must: an earlier
/// file, or its end, is missing.
fn wal_gap(path: &Path, offset: u64, found: u64, expected: u64) -> Error {
    Error::corruption(
        path,
        offset,
        format!(
            "WAL file starts at record {found}, but record {expected} comes next \
             (a WAL file is missing, or its end was lost)"
        ),
    )
}

/// A writer leaves a replayed WAL file as an older WAL may be: whole records only, durable.
/// A torn tail that is not all zeros is kept aside before it is cut, and returned.
fn settle_replayed_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    path: &Path,
    replay: &Replay,
) -> Result<Option<CutTail>> {
    let kept = if replay.torn_tail_bytes > 0 {
        keep_torn_tail(vfs, dir, id, path, replay.valid_len)?
    } else {
        None
    };
    if replay.records == 0 {
        // A WAL holding no record carries nothing (whatever zeros or torn bytes follow its
        // header); without this, every open that writes nothing would leave one more file
        // behind until the next flush. Its tail is cut durably first: the removal is durable
        // only with the directory fsync that also makes this handle's new WAL durable, and
        // should the creation survive a crash without the removal, this file must not be an
        // older WAL with a torn tail.
        if replay.torn_tail_bytes > 0 {
            WalReader::truncate_torn_tail(vfs, path, replay.valid_len)?;
        }
        if vfs.exists(path).map_err(Error::io_on(path, "stat WAL"))? {
            vfs.remove_file(path)
                .map_err(Error::io_on(path, "remove empty WAL"))?;
        }
    } else if replay.torn_tail_bytes > 0 {
        WalReader::truncate_torn_tail(vfs, path, replay.valid_len)?;
        WalReader::seal_file(vfs, path, replay)?;
    } else if !replay.sealed {
        // Left by a crash: sealed now, since it becomes an older WAL file (which must be).
        WalReader::seal_file(vfs, path, replay)?;
    } else {
        // The file becomes an older WAL once this handle creates its own: it must be durable
        // exactly as replayed (an earlier handle may have written or cut it without a
        // successful fsync), or a power loss could bring back a tail that only the newest file
        // may have.
        WalReader::sync_file(vfs, path)?;
    }
    Ok(kept)
}

/// Bytes cut from the end of a WAL file by a writer's recovery that were not all zeros.
///
/// Zeros after the last whole record are the space a writer writes ahead of its records, and a
/// record whose checksum (written last) is still zero was never finished: both are cut
/// silently. Anything else is a record torn by a power loss (never acknowledged) or damage to
/// the last record (acknowledged), and the bytes cannot tell which: they are kept in a file beside the WAL, this handle reports them
/// ([`Db::cut_tails`](super::Db::cut_tails)), and `verify` reports them as corruption until
/// the file is removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutTail {
    /// The WAL file that was cut.
    pub wal: PathBuf,
    /// Where it was cut: the end of its last whole record.
    pub offset: u64,
    /// How many bytes were cut, up to the last non-zero one.
    pub bytes: u64,
    /// The file that keeps them.
    pub kept_in: PathBuf,
}

/// The bytes of a torn tail from `valid_len` that must be kept and reported, up to the last
/// non-zero one; `None` when it goes silently.
fn torn_tail_to_keep(vfs: &dyn Vfs, path: &Path, valid_len: u64) -> Result<Option<Vec<u8>>> {
    let file = vfs
        .open(path, OpenMode::Read)
        .map_err(Error::io_on(path, "open WAL"))?;
    let mut len = file.len().map_err(Error::io_on(path, "stat WAL"))?;
    let mut tail = Vec::new();
    loop {
        tail.resize(len.saturating_sub(valid_len) as usize, 0);
        match file.read_exact_at(&mut tail, valid_len) {
            Ok(()) => break,
            // Only a reader meets this: a writer in another process cut the file meanwhile
            // (the zeros it wrote ahead, when it seals the file). The tail ends where the file
            // now ends.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                let now = file.len().map_err(Error::io_on(path, "stat WAL"))?;
                if now >= len {
                    return Err(Error::io(path, "read WAL", e));
                }
                len = now;
            }
            Err(e) => return Err(Error::io(path, "read WAL", e)),
        }
    }
    let Some(last) = tail.iter().rposition(|&b| b != 0) else {
        return Ok(None);
    };
    // A record's checksum is written after the rest of it: still zero, the record was never
    // finished, so never acknowledged (a process killed mid-write), and it goes silently.
    if valid_len >= WAL_V1_HEADER_LEN && tail.get(..4) == Some(&[0; 4]) {
        return Ok(None);
    }
    // Whole and intact now: a live writer (seen only by a reader) finished it after the
    // replay read it unfinished. (With the database locked the bytes cannot have changed
    // since the replay, which found no record here.)
    if WalReader::starts_with_record(&tail) {
        return Ok(None);
    }
    tail.truncate(last + 1);
    Ok(Some(tail))
}

fn keep_torn_tail(
    vfs: &dyn Vfs,
    dir: &Path,
    id: u64,
    path: &Path,
    valid_len: u64,
) -> Result<Option<CutTail>> {
    let Some(kept) = torn_tail_to_keep(vfs, path, valid_len)? else {
        return Ok(None);
    };
    let kept = kept.as_slice();
    let kept_in = dir.join(names::torn_tail_name(id, valid_len));
    super::commit::write_new_file(vfs, &kept_in, kept, OpenMode::CreateOrTruncate)?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))?;
    Ok(Some(CutTail {
        wal: path.to_path_buf(),
        offset: valid_len,
        bytes: kept.len() as u64,
        kept_in,
    }))
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
) -> Result<GroupCommit> {
    let id = next_file_id.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let writer = WalWriter::create(vfs, &dir.join(names::wal_name(id)), last_seq + 1)?;
    vfs.sync_dir(dir)
        .map_err(Error::io_on(dir, "fsync directory"))?;
    Ok(GroupCommit::new(id, writer, last_seq))
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
