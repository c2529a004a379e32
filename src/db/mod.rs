//! The database: a directory holding a write-ahead log, an append-only signature log,
//! immutable band-posting segments, a deletion list and a manifest naming the live files.
//!
//! Concurrency: one writer *process* (an exclusive lock file), any number of read-only
//! processes (a shared lock). Inside a process, a [`Db`] is `Send + Sync`: many threads may
//! query while others write; writes are serialized, queries see a consistent snapshot (a write
//! batch is applied atomically with respect to queries). The commit protocol and the recovery
//! rules are argued case by case in `format/commit.md`.

mod batch;
mod codec;
mod dedup;
mod files;
mod maintenance;
mod manifest;
mod memtable;
mod params;
mod query;
mod stats;
mod transfer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex, RwLock};

pub use batch::{MAX_KEY_LEN, WriteBatch};
pub use dedup::{DedupPair, DedupStats};
pub use manifest::{MANIFEST_VERSION, SegmentMeta};
pub use params::{DEFAULT_BUCKET_CAP, IndexParams};
pub use query::{Match, QueryOptions, QueryResult, QueryStats};
pub use stats::{BandStats, Stats, VerifyReport};

use batch::{BatchOp, LogOp};
use files::{Deletions, FileKind};
use manifest::{Current, DeletionsMeta, Manifest};
use memtable::MemTable;

use crate::sketch::{Banding, MinHasher, Signature, bbit};
use crate::storage::segment::Segment;
use crate::storage::vfs::{LockMode, Mapped, OpenMode, Prefetch, StdFs, Vfs, VfsFile, VfsLock};
use crate::storage::wal::{WalReader, WalWriter};
use crate::{Error, Result};

/// When a write becomes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every [`Db::write`] returns only after its WAL record is on stable storage; concurrent
    /// writers share one fsync (group commit).
    #[default]
    Sync,
    /// Writes return at once; [`Db::commit`] (or a flush) makes everything before it durable.
    /// For bulk loads.
    None,
}

/// Options that apply to one open handle (not stored in the database).
#[derive(Clone, Debug)]
pub struct Options {
    /// When writes become durable.
    pub durability: Durability,
    /// Flush the in-memory table to a segment when it holds about this many bytes.
    pub memtable_bytes: usize,
    /// Merge segments automatically after a flush, by the log merge policy.
    pub auto_compact: bool,
    /// How many segments of one size class trigger a merge.
    pub merge_factor: usize,
    /// If set, opening fails with [`Error::ParameterMismatch`] unless the stored signature
    /// parameters (scheme, k, seed, shingling) equal these: a caller that signs documents
    /// itself states what it signs with, and never mixes incompatible signatures.
    pub expect_sketch: Option<crate::sketch::SketchParams>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Sync,
            memtable_bytes: 64 << 20,
            auto_compact: true,
            merge_factor: 4,
            expect_sketch: None,
        }
    }
}

/// A signature as stored: the packed b-bit slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSignature {
    /// Bits per slot.
    pub bits: u32,
    /// Number of slots.
    pub num_perm: usize,
    /// The packed bytes (`format/hashing.md` §7).
    pub packed: Vec<u8>,
}

impl StoredSignature {
    /// The slot values (the low `bits` bits of each full-precision slot).
    pub fn slots(&self) -> Result<Vec<u64>> {
        bbit::unpack(&self.packed, self.num_perm, self.bits)
    }
}

/// One segment file, mapped and checked.
pub(crate) struct LoadedSegment {
    pub(crate) meta: SegmentMeta,
    pub(crate) seg: Segment<Mapped>,
    pub(crate) path: PathBuf,
}

/// An immutable view of the committed files.
pub(crate) struct Version {
    pub(crate) manifest: Manifest,
    pub(crate) segments: Vec<Arc<LoadedSegment>>,
    pub(crate) siglog: Option<Mapped>,
    pub(crate) deletions: Deletions,
}

impl Version {
    /// The segment whose docno range holds `docno`.
    pub(crate) fn segment_of(&self, docno: u64) -> Option<&LoadedSegment> {
        let i = self
            .segments
            .partition_point(|s| s.meta.base + s.meta.span <= docno);
        self.segments
            .get(i)
            .filter(|s| s.meta.base <= docno)
            .map(|s| s.as_ref())
    }

    pub(crate) fn siglog_record(&self, docno: u64, record_bytes: usize) -> Option<&[u8]> {
        if docno >= self.manifest.siglog_records {
            return None;
        }
        let start = files::siglog_offset(docno, record_bytes) as usize;
        self.siglog.as_deref()?.get(start..start + record_bytes)
    }

    /// Starts reading the signature-log record of `docno` (a hint for cold queries).
    pub(crate) fn prefetch_siglog_record(&self, docno: u64, record_bytes: usize) {
        if docno < self.manifest.siglog_records
            && let Some(map) = &self.siglog
        {
            map.prefetch(
                files::siglog_offset(docno, record_bytes) as usize,
                record_bytes,
            );
        }
    }
}

/// Mutable in-memory state, behind one reader-writer lock.
pub(crate) struct State {
    pub(crate) mem: MemTable,
    pub(crate) imm: Option<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
}

impl State {
    /// A copy that long reads (dedup) can use without holding the lock: the files are shared
    /// (immutable, reference-counted), the mutable in-memory table is copied (at most
    /// `Options::memtable_bytes`).
    pub(crate) fn snapshot(&self) -> State {
        State {
            mem: self.mem.clone(),
            imm: self.imm.clone(),
            version: self.version.clone(),
        }
    }

    /// True if `docno` is deleted (or was never a live document).
    pub(crate) fn is_deleted(&self, docno: u64) -> bool {
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

    /// The live document number of `key`, if any.
    pub(crate) fn lookup_key(&self, key: &[u8]) -> Result<Option<u64>> {
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

    /// The packed signature of `docno`.
    pub(crate) fn signature_bytes(&self, docno: u64, record_bytes: usize) -> Option<&[u8]> {
        if let Some(d) = self.mem.doc(docno) {
            return Some(d.sig);
        }
        if let Some(d) = self.imm.as_ref().and_then(|imm| imm.doc(docno)) {
            return Some(d.sig);
        }
        self.version.siglog_record(docno, record_bytes)
    }

    /// The key of `docno`.
    pub(crate) fn key_of(&self, docno: u64) -> Result<Option<&[u8]>> {
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
}

/// The WAL and group-commit bookkeeping.
pub(crate) struct WalState {
    pub(crate) id: u64,
    pub(crate) writer: WalWriter,
    /// Payloads appended (and applied) but not yet handed to the WAL writer.
    pub(crate) pending: Vec<(u64, Vec<u8>)>,
    /// Sequence number of the last payload queued.
    pub(crate) queued_seq: u64,
    /// Sequence number up to which the WAL is durable.
    pub(crate) synced_seq: u64,
    /// Whether some thread is writing and syncing right now.
    pub(crate) syncing: bool,
    /// Batches in the previous group commit: how many writers a leader expects to gather.
    pub(crate) last_group: usize,
}

/// An open mhdb database.
pub struct Db {
    pub(crate) dir: PathBuf,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) opts: Options,
    pub(crate) params: IndexParams,
    pub(crate) hasher: MinHasher,
    pub(crate) banding: Banding,
    pub(crate) read_only: bool,
    _lock: Box<dyn VfsLock>,
    pub(crate) state: RwLock<State>,
    /// Serializes docno assignment and WAL queueing, so WAL order is docno order.
    pub(crate) sequencer: Mutex<()>,
    pub(crate) wal: Mutex<Option<WalState>>,
    pub(crate) wal_synced: Condvar,
    /// Signalled when a payload is queued (a group-commit leader may be gathering).
    pub(crate) wal_queued: Condvar,
    /// Writers between the start of `write` and queueing their payload.
    pub(crate) writers_preparing: std::sync::atomic::AtomicUsize,
    /// Serializes flushes and compactions (the manifest writers).
    pub(crate) maintenance: Mutex<()>,
    pub(crate) next_file_id: AtomicU64,
    /// Set by the first failed write or sync: from then on writes are refused.
    pub(crate) failed: AtomicBool,
    pub(crate) siglog_file: Option<Arc<dyn VfsFile>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.dir)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

pub(crate) fn io_err(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        path: Some(path),
        op,
        source,
    }
}

impl Drop for Db {
    /// Cuts the zeros written ahead of the WAL's records off (best effort), so that the next
    /// open finds whole records only and has nothing to truncate. Batches still queued without
    /// a commit are not written: they were never acknowledged as durable.
    fn drop(&mut self) {
        if let Some(w) = self.wal.get_mut() {
            let _ = w.writer.seal();
        }
    }
}

impl Db {
    /// Creates a new database in `dir` (which must not hold one already).
    pub fn create(dir: impl AsRef<Path>, params: IndexParams, opts: Options) -> Result<Db> {
        Self::create_with_vfs(Arc::new(StdFs), dir, params, opts)
    }

    /// Opens the database in `dir`, or creates it with `params` if `dir` holds none.
    /// An existing database keeps its stored parameters; `params` is then not consulted.
    pub fn open_or_create(dir: impl AsRef<Path>, params: IndexParams, opts: Options) -> Result<Db> {
        let dir = dir.as_ref();
        let current = dir.join(files::CURRENT);
        if StdFs.exists(&current).map_err(io_err(&current, "stat"))? {
            Self::open(dir, opts)
        } else {
            Self::create(dir, params, opts)
        }
    }

    /// Opens an existing database for reading and writing.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Self::open_with_vfs(Arc::new(StdFs), dir, opts, false)
    }

    /// Opens an existing database read-only: many processes may do so at once; nothing on
    /// disk is modified.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Db> {
        Self::open_with_vfs(Arc::new(StdFs), dir, Options::default(), true)
    }

    /// [`Db::create`] on any [`Vfs`] (used by the crash and fault tests).
    pub fn create_with_vfs(
        vfs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        params: IndexParams,
        opts: Options,
    ) -> Result<Db> {
        let dir = dir.as_ref();
        params.validate()?;
        vfs.create_dir_all(dir)
            .map_err(io_err(dir, "create directory"))?;
        let lock_path = dir.join(files::LOCK);
        let lock = vfs
            .lock(&lock_path, LockMode::Exclusive)
            .map_err(|e| lock_error(e, &lock_path))?;
        let current = dir.join(files::CURRENT);
        if vfs.exists(&current).map_err(io_err(&current, "stat"))? {
            return Err(Error::invalid(
                "path",
                format!("{} already holds an mhdb database", dir.display()),
            ));
        }
        // Leftovers of an interrupted create (no CURRENT yet) are ours to replace.
        let siglog_path = dir.join(files::SIGLOG);
        let siglog = vfs
            .open(&siglog_path, OpenMode::CreateOrTruncate)
            .map_err(io_err(&siglog_path, "create"))?;
        let header = files::siglog_header(
            params.sketch.num_perm as u32,
            params.bits,
            params.sig_bytes() as u32,
        );
        siglog
            .write_all_at(&header, 0)
            .map_err(io_err(&siglog_path, "write"))?;
        siglog.sync_data().map_err(io_err(&siglog_path, "fsync"))?;
        let wal_path = dir.join(files::wal_name(1));
        WalWriter::create(vfs.as_ref(), &wal_path)?;
        let manifest = Manifest {
            generation: 1,
            params,
            next_docno: 0,
            siglog_records: 0,
            wal_start: 1,
            next_file_id: 2,
            deletions: DeletionsMeta::default(),
            segments: Vec::new(),
        };
        maintenance::write_manifest(vfs.as_ref(), dir, &manifest)?;
        drop(lock);
        Self::open_with_vfs(vfs, dir, opts, false)
    }

    /// [`Db::open`] / [`Db::open_read_only`] on any [`Vfs`].
    pub fn open_with_vfs(
        vfs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        opts: Options,
        read_only: bool,
    ) -> Result<Db> {
        let dir = dir.as_ref().to_path_buf();
        let current_path = dir.join(files::CURRENT);
        if !vfs
            .exists(&current_path)
            .map_err(io_err(&current_path, "stat"))?
        {
            return Err(Error::invalid(
                "path",
                format!(
                    "{} is not an mhdb database (no CURRENT file)",
                    dir.display()
                ),
            ));
        }
        let lock_path = dir.join(files::LOCK);
        let mode = if read_only {
            LockMode::Shared
        } else {
            LockMode::Exclusive
        };
        let lock = vfs
            .lock(&lock_path, mode)
            .map_err(|e| lock_error(e, &lock_path))?;

        let current_bytes = read_whole(vfs.as_ref(), &current_path)?;
        let current = Current::decode(&current_bytes, &current_path)?;
        let manifest_path = dir.join(files::manifest_name(current.generation));
        let manifest_bytes = read_whole(vfs.as_ref(), &manifest_path)?;
        current.check(&manifest_bytes, &manifest_path)?;
        let manifest = Manifest::decode(&manifest_bytes, &manifest_path)?;
        let params = manifest.params;
        if let Some(expected) = &opts.expect_sketch {
            params.check_compatible(expected)?;
        }
        let hasher = params.hasher()?;
        let banding = params.banding()?;
        let record_bytes = params.sig_bytes();

        // The signature log: at least the committed records; a longer tail is an interrupted
        // flush, cut off by a writer and ignored by a reader.
        let siglog_path = dir.join(files::SIGLOG);
        let siglog_file = vfs
            .open(
                &siglog_path,
                if read_only {
                    OpenMode::Read
                } else {
                    OpenMode::ReadWrite
                },
            )
            .map_err(io_err(&siglog_path, "open"))?;
        let siglog_len = siglog_file.len().map_err(io_err(&siglog_path, "stat"))?;
        let mut header = vec![0u8; files::SIGLOG_HEADER_LEN as usize];
        if siglog_len < files::SIGLOG_HEADER_LEN {
            return Err(codec::corruption(
                &siglog_path,
                siglog_len,
                "signature log is shorter than its header",
            ));
        }
        siglog_file
            .read_exact_at(&mut header, 0)
            .map_err(io_err(&siglog_path, "read"))?;
        files::check_siglog_header(
            &header,
            &siglog_path,
            params.sketch.num_perm as u32,
            params.bits,
            record_bytes as u32,
        )?;
        let committed_len = files::siglog_offset(manifest.siglog_records, record_bytes);
        if siglog_len < committed_len {
            return Err(codec::corruption(
                &siglog_path,
                siglog_len,
                format!(
                    "signature log ends at {siglog_len} but {} committed records need {committed_len} bytes",
                    manifest.siglog_records
                ),
            ));
        }
        if siglog_len > committed_len && !read_only {
            siglog_file
                .set_len(committed_len)
                .map_err(io_err(&siglog_path, "truncate"))?;
            siglog_file
                .sync_data()
                .map_err(io_err(&siglog_path, "fsync"))?;
        }

        let version = Arc::new(load_version(vfs.as_ref(), &dir, manifest)?);

        // Replay the WAL into a fresh in-memory table.
        let names = vfs.list_dir(&dir).map_err(io_err(&dir, "list directory"))?;
        let mut wal_ids: Vec<u64> = names
            .iter()
            .filter_map(|n| match files::classify(n) {
                Some(FileKind::Wal(id)) if id >= version.manifest.wal_start => Some(id),
                _ => None,
            })
            .collect();
        wal_ids.sort_unstable();
        let mut mem = MemTable::new(version.manifest.next_docno, params.lsh.bands, record_bytes);
        // Size the table for the WAL's inserts (each logs at least its band keys and
        // signature) and build the band buckets once at the end.
        let mut wal_bytes = 0u64;
        for &id in &wal_ids {
            let path = dir.join(files::wal_name(id));
            let file = vfs
                .open(&path, OpenMode::Read)
                .map_err(io_err(&path, "open"))?;
            wal_bytes += file.len().map_err(io_err(&path, "stat"))?;
        }
        let min_insert_bytes = (record_bytes + params.lsh.bands * 8) as u64;
        mem.reserve(usize::try_from(wal_bytes / min_insert_bytes).unwrap_or(0));
        mem.defer_buckets();
        let mut last_seq = 0u64;
        for (i, &id) in wal_ids.iter().enumerate() {
            let path = dir.join(files::wal_name(id));
            let is_last = i + 1 == wal_ids.len();
            let mut first_in_file = true;
            let replay = WalReader::replay(vfs.as_ref(), &path, |seq, offset, payload| {
                // Sequence numbers continue from one WAL file to the next: a gap means an
                // older file lost its end (e.g. was truncated at a record boundary).
                if first_in_file && last_seq > 0 && seq != last_seq + 1 {
                    return Err(codec::corruption(
                        &path,
                        offset,
                        format!(
                            "WAL starts at record {seq}, but the previous WAL file ended at {last_seq}"
                        ),
                    ));
                }
                first_in_file = false;
                batch::decode_ops(
                    payload,
                    params.lsh.bands,
                    record_bytes,
                    &path,
                    offset,
                    |op| match op {
                        batch::OpRef::Insert {
                            docno,
                            key,
                            band_keys,
                            sig,
                        } => {
                            if mem.insert(docno, key, batch::band_keys_le(band_keys), sig) {
                                Ok(())
                            } else {
                                Err(codec::corruption(
                                    &path,
                                    offset,
                                    format!(
                                        "WAL insert of document {docno} does not continue the numbering at {}",
                                        mem.next_docno()
                                    ),
                                ))
                            }
                        }
                        batch::OpRef::Delete { docno } => {
                            mem.retire(docno);
                            Ok(())
                        }
                    },
                )?;
                last_seq = last_seq.max(seq);
                Ok(())
            })?;
            if replay.torn_tail_bytes > 0 && !is_last {
                return Err(codec::corruption(
                    &path,
                    replay.valid_len,
                    "torn record in a WAL file that is not the newest",
                ));
            }
            if read_only {
                // Readers change no byte: they ignore a torn tail.
            } else if replay.records == 0 {
                // A WAL holding no record carries nothing (whatever zeros or torn bytes follow
                // its header); without this, every open that writes nothing would leave one
                // more file behind until the next flush. Its tail is cut durably first: the
                // removal is durable only with the directory fsync that also makes this
                // handle's new WAL durable, and should the creation survive a crash without
                // the removal, this file must not be an older WAL with a torn tail.
                if replay.torn_tail_bytes > 0 {
                    WalReader::truncate_torn_tail(vfs.as_ref(), &path, replay.valid_len)?;
                }
                if vfs.exists(&path).map_err(io_err(&path, "stat WAL"))? {
                    vfs.remove_file(&path)
                        .map_err(io_err(&path, "remove empty WAL"))?;
                }
            } else if replay.torn_tail_bytes > 0 {
                WalReader::truncate_torn_tail(vfs.as_ref(), &path, replay.valid_len)?;
            } else {
                // The file becomes an older WAL once this handle creates its own: it must be
                // durable exactly as replayed (an earlier handle may have written or cut it
                // without a successful fsync), or a power loss could bring back a tail that
                // only the newest file may have.
                WalReader::sync_file(vfs.as_ref(), &path)?;
            }
        }

        mem.build_deferred_buckets();

        let mut max_id = version.manifest.next_file_id;
        for n in &names {
            if let Some(
                FileKind::Wal(id)
                | FileKind::Segment(id)
                | FileKind::Deletions(id)
                | FileKind::Manifest(id),
            ) = files::classify(n)
            {
                max_id = max_id.max(id + 1);
            }
        }
        let next_file_id = AtomicU64::new(max_id);

        let wal = if read_only {
            None
        } else {
            // Writes go to a fresh WAL file; the replayed ones stay until the next flush.
            let id = next_file_id.fetch_add(1, Ordering::SeqCst);
            let path = dir.join(files::wal_name(id));
            let writer = WalWriter::create(vfs.as_ref(), &path)?;
            writer.set_next_seq(last_seq + 1);
            vfs.sync_dir(&dir)
                .map_err(io_err(&dir, "fsync directory"))?;
            Some(WalState {
                id,
                writer,
                pending: Vec::new(),
                queued_seq: last_seq,
                synced_seq: last_seq,
                syncing: false,
                last_group: 1,
            })
        };

        let db = Db {
            dir,
            vfs,
            opts,
            params,
            hasher,
            banding,
            read_only,
            _lock: lock,
            state: RwLock::new(State {
                mem,
                imm: None,
                version,
            }),
            sequencer: Mutex::new(()),
            wal: Mutex::new(wal),
            wal_synced: Condvar::new(),
            wal_queued: Condvar::new(),
            writers_preparing: std::sync::atomic::AtomicUsize::new(0),
            maintenance: Mutex::new(()),
            next_file_id,
            failed: AtomicBool::new(false),
            siglog_file: (!read_only).then_some(siglog_file),
        };
        if !read_only {
            db.remove_obsolete_files()?;
        }
        Ok(db)
    }

    /// The parameters the database was created with.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// The signer matching this database's parameters.
    pub fn hasher(&self) -> &MinHasher {
        &self.hasher
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Errors unless `sig` has this database's number of slots.
    pub(crate) fn check_signature(&self, sig: &Signature) -> Result<()> {
        if sig.len() != self.params.sketch.num_perm {
            return Err(Error::invalid(
                "signature",
                format!(
                    "has {} slots, the database stores {}",
                    sig.len(),
                    self.params.sketch.num_perm
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.failed.load(Ordering::SeqCst) {
            return Err(Error::PreviousIo);
        }
        Ok(())
    }

    pub(crate) fn fail<T>(&self, e: Error) -> Result<T> {
        if matches!(e, Error::Io { .. } | Error::Corruption { .. }) {
            self.failed.store(true, Ordering::SeqCst);
        }
        Err(e)
    }

    /// Applies a batch atomically. With [`Durability::Sync`] it is durable when this returns.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        let _preparing = PreparingGuard::new(&self.writers_preparing);
        // Sign and band outside every lock.
        enum Prepared<'a> {
            Put {
                key: &'a [u8],
                band_keys: Box<[u64]>,
                sig: Box<[u8]>,
            },
            Delete {
                key: &'a [u8],
            },
        }
        let mut prepared = Vec::with_capacity(batch.ops.len());
        for op in &batch.ops {
            let (key, sig) = match op {
                BatchOp::Put { key, sig } => (key, std::borrow::Cow::Borrowed(sig)),
                BatchOp::PutText { key, text } => {
                    (key, std::borrow::Cow::Owned(self.hasher.sketch_text(text)))
                }
                BatchOp::Delete { key } => {
                    check_key(key)?;
                    prepared.push(Prepared::Delete { key });
                    continue;
                }
            };
            check_key(key)?;
            self.check_signature(&sig)?;
            let band_keys = self.banding.band_keys(sig.slots())?.into();
            let packed = bbit::pack(sig.slots(), self.params.bits)?.into();
            prepared.push(Prepared::Put {
                key,
                band_keys,
                sig: packed,
            });
        }

        let seq = {
            let _order = self.sequencer.lock();
            self.check_writable()?;
            let mut ops = Vec::with_capacity(prepared.len() + 1);
            {
                let state = self.state.read();
                let mut next = state.mem.next_docno();
                // Keys touched earlier in this batch shadow the stored state.
                let mut overlay: HashMap<&[u8], Option<u64>> = HashMap::new();
                for p in prepared {
                    match p {
                        Prepared::Put {
                            key,
                            band_keys,
                            sig,
                        } => {
                            let existing = match overlay.get(key) {
                                Some(v) => *v,
                                None => state.lookup_key(key)?,
                            };
                            if let Some(old) = existing {
                                ops.push(LogOp::Delete { docno: old });
                            }
                            ops.push(LogOp::Insert {
                                docno: next,
                                key: key.into(),
                                band_keys,
                                sig,
                            });
                            overlay.insert(key, Some(next));
                            next += 1;
                        }
                        Prepared::Delete { key } => {
                            let existing = match overlay.get(key) {
                                Some(v) => *v,
                                None => state.lookup_key(key)?,
                            };
                            if let Some(old) = existing {
                                ops.push(LogOp::Delete { docno: old });
                            }
                            overlay.insert(key, None);
                        }
                    }
                }
            }
            if ops.is_empty() {
                return Ok(());
            }
            let payload = batch::encode_ops(&ops);
            if payload.len() > crate::storage::wal::MAX_RECORD_LEN {
                // Refused before anything is queued or applied: the batch has no effect.
                return Err(Error::invalid(
                    "batch",
                    format!(
                        "encodes to {} bytes, more than one WAL record may hold ({}); split it or use bulk_insert",
                        payload.len(),
                        crate::storage::wal::MAX_RECORD_LEN
                    ),
                ));
            }
            let seq = {
                let mut wal = self.wal.lock();
                let Some(w) = wal.as_mut() else {
                    return Err(Error::ReadOnly);
                };
                w.queued_seq += 1;
                let seq = w.queued_seq;
                w.pending.push((seq, payload));
                seq
            };
            drop(_preparing);
            self.wal_queued.notify_all();
            let mut state = self.state.write();
            for op in &ops {
                match op {
                    LogOp::Insert {
                        docno,
                        key,
                        band_keys,
                        sig,
                    } => {
                        state
                            .mem
                            .insert(*docno, key, band_keys.iter().copied(), sig);
                    }
                    LogOp::Delete { docno } => state.mem.retire(*docno),
                }
            }
            seq
        };
        if self.opts.durability == Durability::Sync {
            self.sync_wal_through(seq)?;
        } else {
            self.write_pending_if_large()?;
        }
        self.maybe_flush()
    }

    /// Inserts (or replaces) one document by signature.
    pub fn insert(&self, key: impl AsRef<[u8]>, sig: &Signature) -> Result<()> {
        let mut b = WriteBatch::new();
        b.insert(key, sig.clone());
        self.write(&b)
    }

    /// Inserts (or replaces) one document by text.
    pub fn insert_text(&self, key: impl AsRef<[u8]>, text: &str) -> Result<()> {
        let mut b = WriteBatch::new();
        b.insert_text(key, text);
        self.write(&b)
    }

    /// Deletes `key`. Returns whether it was present.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let present = self.contains(key.as_ref())?;
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(&b)?;
        Ok(present)
    }

    /// Makes every write before this call durable.
    pub fn commit(&self) -> Result<()> {
        self.check_writable()?;
        let seq = match self.wal.lock().as_ref() {
            Some(w) => w.queued_seq,
            None => return Err(Error::ReadOnly),
        };
        self.sync_wal_through(seq)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.state.read().lookup_key(key.as_ref())?.is_some())
    }

    /// The stored (packed) signature of `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<StoredSignature>> {
        let state = self.state.read();
        let Some(docno) = state.lookup_key(key.as_ref())? else {
            return Ok(None);
        };
        let bytes = state
            .signature_bytes(docno, self.params.sig_bytes())
            .ok_or_else(|| {
                codec::corruption(
                    &self.dir.join(files::SIGLOG),
                    files::siglog_offset(docno, self.params.sig_bytes()),
                    format!("no signature record for document {docno}"),
                )
            })?;
        Ok(Some(StoredSignature {
            bits: self.params.bits,
            num_perm: self.params.sketch.num_perm,
            packed: bytes.to_vec(),
        }))
    }

    /// Every live key, in no particular order.
    pub fn keys(&self) -> Result<Vec<Vec<u8>>> {
        let state = self.state.read();
        let mut out = Vec::new();
        for seg in &state.version.segments {
            for doc in seg.seg.docs() {
                let (docno, key) = doc?;
                if !state.is_deleted(docno) {
                    out.push(key.to_vec());
                }
            }
        }
        if let Some(imm) = &state.imm {
            for (docno, doc) in imm.live_docs() {
                if !state.is_deleted(docno) {
                    out.push(doc.key.to_vec());
                }
            }
        }
        for (_, doc) in state.mem.live_docs() {
            out.push(doc.key.to_vec());
        }
        Ok(out)
    }

    /// Writes queued WAL payloads and fsyncs until `seq` is durable; concurrent callers share
    /// one write + fsync (group commit).
    pub(crate) fn sync_wal_through(&self, seq: u64) -> Result<()> {
        let mut guard = self.wal.lock();
        loop {
            let Some(w) = guard.as_mut() else {
                return Err(Error::ReadOnly);
            };
            if w.synced_seq >= seq {
                return Ok(());
            }
            if self.failed.load(Ordering::SeqCst) {
                return Err(Error::PreviousIo);
            }
            if w.syncing {
                self.wal_synced.wait(&mut guard);
                continue;
            }
            // Become the leader. Writers that are about to queue join this group if they do so
            // within a fraction of an fsync (group commit); then write outside the lock.
            w.syncing = true;
            let deadline =
                std::time::Instant::now() + std::time::Duration::from_micros(GATHER_MICROS);
            while self.opts.durability == Durability::Sync
                && guard.as_ref().is_some_and(|w| {
                    self.writers_preparing.load(Ordering::SeqCst) > 0
                        || w.pending.len() < w.last_group
                })
            {
                if self.wal_queued.wait_until(&mut guard, deadline).timed_out() {
                    break;
                }
            }
            let Some(w) = guard.as_mut() else {
                return Err(Error::ReadOnly);
            };
            let batch = std::mem::take(&mut w.pending);
            w.last_group = batch.len().max(1);
            let through = w.queued_seq;
            let writer = w.writer.clone();
            drop(guard);
            // One record for the whole group: a crash can then tear only that record.
            let records = batch::combine_payloads(
                batch.iter().map(|(_, p)| p.as_slice()),
                crate::storage::wal::MAX_RECORD_LEN,
            );
            let result = writer.append_all_and_sync(records.iter().map(|r| r.as_ref()));
            guard = self.wal.lock();
            if let Some(w) = guard.as_mut() {
                w.syncing = false;
                if result.is_ok() {
                    w.synced_seq = w.synced_seq.max(through);
                }
            }
            self.wal_synced.notify_all();
            if let Err(e) = result {
                drop(guard);
                return self.fail(e);
            }
        }
    }

    /// Without per-write sync, hand large queues to the WAL now, so memory stays bounded. They
    /// are synced too (one fsync per 4 MiB of batches), since the WAL never holds more than
    /// one unsynced record.
    fn write_pending_if_large(&self) -> Result<()> {
        let mut guard = self.wal.lock();
        let Some(w) = guard.as_mut() else {
            return Ok(());
        };
        let queued: usize = w.pending.iter().map(|(_, p)| p.len()).sum();
        if queued < (4 << 20) || w.syncing {
            return Ok(());
        }
        let batch = std::mem::take(&mut w.pending);
        let records = batch::combine_payloads(
            batch.iter().map(|(_, p)| p.as_slice()),
            crate::storage::wal::MAX_RECORD_LEN,
        );
        let result = w
            .writer
            .append_all_and_sync(records.iter().map(|r| r.as_ref()));
        drop(guard);
        match result {
            Ok(()) => Ok(()),
            Err(e) => self.fail(e),
        }
    }
}

/// How long a group-commit leader waits for writers that are preparing a batch.
const GATHER_MICROS: u64 = 100;

/// Counts a writer as preparing until dropped (also on early returns).
struct PreparingGuard<'a>(&'a std::sync::atomic::AtomicUsize, bool);

impl<'a> PreparingGuard<'a> {
    fn new(counter: &'a std::sync::atomic::AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        PreparingGuard(counter, true)
    }
}

impl Drop for PreparingGuard<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::invalid(
            "key",
            format!("is {} bytes, at most {MAX_KEY_LEN} allowed", key.len()),
        ));
    }
    Ok(())
}

fn lock_error(e: std::io::Error, path: &Path) -> Error {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Error::Locked {
            path: path.to_path_buf(),
        }
    } else {
        Error::Io {
            path: Some(path.to_path_buf()),
            op: "lock",
            source: e,
        }
    }
}

pub(crate) fn read_whole(vfs: &dyn Vfs, path: &Path) -> Result<Vec<u8>> {
    let file = vfs
        .open(path, OpenMode::Read)
        .map_err(io_err(path, "open"))?;
    let len = file.len().map_err(io_err(path, "stat"))?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(io_err(path, "read"))?;
    Ok(buf)
}

/// Maps and checks every file a manifest names.
pub(crate) fn load_version(vfs: &dyn Vfs, dir: &Path, manifest: Manifest) -> Result<Version> {
    let mut segments = Vec::with_capacity(manifest.segments.len());
    for meta in &manifest.segments {
        let loaded = load_segment(vfs, dir, meta.clone())?;
        // Every query reads one directory slot per band: have the OS read the directories
        // (0.26 B per posting) in the background now rather than one slot at a time later.
        loaded.seg.prefetch_directories();
        segments.push(Arc::new(loaded));
    }
    let siglog = if manifest.siglog_records > 0 {
        let path = dir.join(files::SIGLOG);
        Some(vfs.map_readonly(&path).map_err(io_err(&path, "mmap"))?)
    } else {
        None
    };
    let deletions = if manifest.deletions.id != 0 {
        let path = dir.join(files::deletions_name(manifest.deletions.id));
        let map = vfs.map_readonly(&path).map_err(io_err(&path, "mmap"))?;
        if map.len() as u64 != manifest.deletions.file_len {
            return Err(codec::corruption(
                &path,
                map.len() as u64,
                format!(
                    "deletion list is {} bytes, manifest says {}",
                    map.len(),
                    manifest.deletions.file_len
                ),
            ));
        }
        Deletions::open(map, &path, manifest.deletions.count)?
    } else {
        Deletions::default()
    };
    Ok(Version {
        manifest,
        segments,
        siglog,
        deletions,
    })
}

pub(crate) fn load_segment(vfs: &dyn Vfs, dir: &Path, meta: SegmentMeta) -> Result<LoadedSegment> {
    let path = dir.join(files::segment_name(meta.id));
    let map = vfs.map_readonly(&path).map_err(io_err(&path, "mmap"))?;
    if map.len() as u64 != meta.file_len {
        return Err(codec::corruption(
            &path,
            map.len() as u64,
            format!(
                "segment is {} bytes, manifest says {}",
                map.len(),
                meta.file_len
            ),
        ));
    }
    let seg = Segment::open(map, &path)?;
    Ok(LoadedSegment { meta, seg, path })
}
