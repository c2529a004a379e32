//! The database: a directory holding a write-ahead log, immutable segments (band postings,
//! keys and signatures, checked 4 KiB block by block as they are read), a deletion list and a
//! manifest naming the live files (`format/`).
//!
//! Concurrency: one writer *process* (an exclusive lock), any number of read-only processes
//! (no lock). Inside a process, a [`Db`] is `Send + Sync`: many threads may
//! query while others write; writes are serialized, queries see a consistent snapshot (a write
//! batch is applied atomically with respect to queries). The commit protocol and the recovery
//! rules are argued case by case in `format/commit.md`.
//!
//! The modules follow a database's lifecycle:
//!
//! | module | owns |
//! | --- | --- |
//! | `params_builder` | a new index's parameters from the options a user gave |
//! | `open`, `replay` | create, open and recovery, step by step; the WAL replayed on open |
//! | `version`, `state` | the committed files a manifest names; what reads see (tables + version) |
//! | `write`, `group_commit` | the write path ([`WriteBatch`]) and the shared WAL fsync |
//! | [`ingest`] | loading many documents: records signed on every core, committed in order |
//! | `memtable` | the in-memory table of documents not yet in a segment |
//! | `flush`, `bulk` | in-memory table → segment; documents straight to a segment |
//! | `compaction`, `compaction_policy` | rewriting runs of segments, and which runs |
//! | `commit` | the commit protocol: new files, manifest switch, obsolete-file removal |
//! | `query` (its stages in `query_*`), `dedup`, `stats`, `transfer` | reads: queries, all-pairs dedup, stats and verify, export and merge |
//! | `shards` | many read-only databases answering as one index ([`Shards`]): queries, dedup, stats and verify across them |
//! | `read_index` | what front ends read through, one database or shards alike ([`ReadIndex`]) |
//! | `novel` | insert if novel: the check and the insert as one step ([`Db::insert_if_novel`]) |
//! | `metric` | the metric a reported similarity is in ([`Metric`]) |
//! | `kind` | everything that differs between MinHash and SimHash indexes: signing, band keys, thresholds, reporting |

mod bulk;
mod columns;
mod commit;
mod compaction;
mod compaction_policy;
mod compatibility;
mod dedup;
mod dedup_exact;
mod dedup_scan;
mod dedup_verify;
mod exact;
mod flush;
mod group_commit;
mod identity;
pub mod ingest;
mod kind;
mod memtable;
mod metric;
mod novel;
mod open;
mod options;
mod params;
mod params_builder;
mod params_stored;
mod query;
mod query_cap;
mod query_cold;
mod query_containment;
mod query_gather;
mod query_rank;
mod query_stream;
mod query_verify;
mod read_index;
mod replay;
mod rerank;
mod shards;
mod state;
mod stats;
mod top_k;
mod transfer;
mod upgrade;
mod version;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

pub use crate::storage::identity::DbId;
pub use crate::storage::manifest::{MANIFEST_VERSION, SegmentMeta};
pub use crate::storage::wal::batch::MAX_KEY_LEN;
pub use columns::ColumnCounts;
pub use dedup::{DedupOptions, DedupPair, DedupStats};
pub use dedup_exact::{CopyGrouping, PairSide};
pub use exact::ExactHashCounts;
pub use identity::{IdentitySource, TEST_IDENTITY_ENV, identity_for_new_database};
pub use kind::max_distance_for_threshold;
pub use metric::Metric;
pub use novel::{Novelty, NoveltyOptions};
pub use options::{Durability, Options};
pub use params::{
    CONTAINMENT_BANDINGS, DEFAULT_BAND_SLOTS, DEFAULT_BUCKET_CAP, DEFAULT_KPERM_SLOTS,
    DEFAULT_OPH_SLOTS, IndexKind, IndexParams, STORED_SETS_RECALL, containment_band_count,
    default_band_slots, default_bits, default_slots,
};
pub use params_builder::{
    DEFAULT_MAX_HAMMING, DEFAULT_THRESHOLD, IndexOption, IndexOptions, KindChoice, OptionsError,
    ParamsWarning, weak_banding,
};
pub use query::{Match, QueryOptions, QueryResult, QueryStats};
pub(crate) use query_stream::query_document;
pub use read_index::{IndexStats, ReadIndex};
pub use replay::CutTail;
pub use rerank::{MARGIN_SIGMAS, rerank_margin};
pub use shards::{Shards, ShardsAnswer, ShardsStats};
pub use stats::{BandStats, Stats, VerifyReport};
pub use top_k::{TOP_K_FLOOR, band_reliable_similarity};
pub use transfer::check_merge_sources;
pub use upgrade::{UpgradeOptions, UpgradePlan, Upgraded};
pub use write::WriteBatch;

use group_commit::GroupCommit;
use state::State;

use crate::sketch::bbit;
use crate::storage::manifest::Features;
use crate::storage::names;
use crate::storage::segment::ColumnSet;
use crate::storage::vfs::{StdFs, Vfs, VfsLock};
use crate::{Error, Result};
use kind::Sketcher;

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

/// An open mhdb database.
pub struct Db {
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    opts: Options,
    params: IndexParams,
    /// How this index's kind signs text and keys bands.
    sketcher: Sketcher,
    /// The per-document columns the index has (manifest features): documents carry their
    /// values through the WAL, segments, compaction and copies.
    columns: ColumnSet,
    /// The index's segments carry a filter per band (manifest feature BAND_FILTERS): each
    /// segment this handle writes gets them.
    band_filters: bool,
    /// The stored exact hashes `drop_exact_copies` looks up, built on its first call.
    exact_seen: Mutex<exact::ExactSeen>,
    read_only: bool,
    /// The writer's locks (none for a reader).
    _locks: Vec<Box<dyn VfsLock>>,
    /// What reads see; writers hold it briefly to apply a batch or install a version.
    state: RwLock<State>,
    /// Serializes docno assignment and WAL queueing, so WAL order is docno order.
    sequencer: Mutex<()>,
    group_commit: GroupCommit,
    /// Serializes flushes and compactions (the manifest writers).
    maintenance: Mutex<()>,
    next_file_id: AtomicU64,
    /// The database's identity, which every file it writes carries ([`DbId::NONE`] for a
    /// database of version 1 or 2, opened read-only).
    db_id: DbId,
    /// Set by the first failed write or sync: from then on writes are refused.
    failed: AtomicBool,
    /// The error that set `failed`, as reported: every refusal after it names it.
    failure: parking_lot::Mutex<Option<String>>,
    /// A WAL write or fsync failed: the in-memory table may hold batches that did not commit
    /// (queries still see them; a reopen drops them; `export` refuses to copy them).
    memory_ahead: AtomicBool,
    /// What this handle's recovery cut from WAL files and kept aside.
    cut_tails: Vec<CutTail>,
}

// Many threads share one handle: keep it so.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Db>();
};

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.dir)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl Drop for Db {
    /// Cuts the zeros written ahead of the WAL's records off (best effort), so that the next
    /// open finds whole records only and has nothing to truncate. Batches still queued without
    /// a commit are not written: they were never acknowledged as durable.
    fn drop(&mut self) {
        // Best effort: `Db::close` is for a caller that wants to hear of a failure.
        let _ = self.group_commit.seal();
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
        let current = dir.join(names::CURRENT);
        if StdFs
            .exists(&current)
            .map_err(Error::io_on(&current, "stat"))?
        {
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

    /// [`Db::create`] on any [`Vfs`] (the crash and fault tests use a simulated one).
    pub fn create_with_vfs(
        vfs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        params: IndexParams,
        opts: Options,
    ) -> Result<Db> {
        let signs = params.can_have_exact_hashes();
        let columns = ColumnSet {
            exact: opts.exact_hash && signs,
            keep: None,
            // A containment index cannot work without its documents' set sizes.
            set_size: (opts.set_size && signs) || params.kind == IndexKind::Containment,
        };
        let features = columns::with_columns(Features::NONE, columns)
            .with(Features::BAND_FILTERS, opts.band_filters);
        open::create(vfs, dir.as_ref(), params, opts, (features, None))
    }

    /// [`Db::open`] / [`Db::open_read_only`] on any [`Vfs`].
    pub fn open_with_vfs(
        vfs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        opts: Options,
        read_only: bool,
    ) -> Result<Db> {
        open::open(vfs, dir.as_ref(), opts, read_only)
    }

    /// The parameters the database was created with.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The database's identity (`format/v3-design.md`, "Database identity"); `None` for a
    /// database of format version 1 or 2, which has none.
    pub fn identity(&self) -> Option<DbId> {
        (!self.db_id.is_none()).then_some(self.db_id)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.state.read().lookup_key(key.as_ref())?.is_some())
    }

    /// The document number of `key` (`None` when absent): numbers grow with insertion, so
    /// they order documents by age (an upsert is as old as its last insert).
    pub fn docno_of(&self, key: impl AsRef<[u8]>) -> Result<Option<u64>> {
        self.state.read().lookup_key(key.as_ref())
    }

    /// The stored (packed) signature of `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<StoredSignature>> {
        let state = self.state.read();
        let Some(docno) = state.lookup_key(key.as_ref())? else {
            return Ok(None);
        };
        let bytes = state
            .signature_bytes(docno, self.params.sig_bytes())?
            .ok_or_else(|| {
                Error::corruption(
                    &self.dir,
                    0,
                    format!("no signature stored for document {docno}"),
                )
            })?;
        Ok(Some(StoredSignature {
            bits: self.params.bits,
            num_perm: self.params.sketch.num_perm,
            packed: bytes.to_vec(),
        }))
    }

    /// The number of live documents.
    pub fn len(&self) -> u64 {
        self.state.read().live_count()
    }

    /// True when the database holds no live document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// Moves a read-only handle to the newest committed state (what a writer in another
    /// process has committed since this handle opened or last refreshed, its WAL included).
    /// Segments still named are kept mapped, not reopened. Queries running meanwhile finish
    /// on the state they started with. A writer's handle is always current: this does
    /// nothing there.
    pub fn refresh(&self) -> Result<()> {
        if !self.read_only {
            return Ok(());
        }
        let previous = self.state.read().version.clone();
        let committed = open::read_consistent(self.vfs.as_ref(), &self.dir, Some(&previous))?;
        if committed.version.manifest.params != self.params {
            return Err(Error::invalid(
                "path",
                format!(
                    "{} now holds a database with other parameters",
                    self.dir.display()
                ),
            ));
        }
        *self.state.write() = State {
            mem: committed.mem,
            imm: None,
            version: Arc::new(committed.version),
        };
        Ok(())
    }

    /// Whether this handle was opened read-only ([`Db::open_read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Torn WAL tails that were not all zeros, cut by this handle's recovery and kept aside
    /// (see [`CutTail`]). A caller should tell its user: the last write before a crash may
    /// have been lost, or damaged. A read-only handle cuts nothing: it lists the tails it
    /// found and left in place (a writer's open keeps them in `kept_in`), and its
    /// [`verify`](Db::verify) reports them as corruption.
    pub fn cut_tails(&self) -> &[CutTail] {
        &self.cut_tails
    }

    /// Closes the handle as dropping it does, sealing its WAL, and says whether that failed.
    /// Everything committed stays committed either way: a seal that failed only leaves the
    /// next open a tail to cut, which it does.
    pub fn close(mut self) -> Result<()> {
        self.group_commit.seal()
    }

    /// Errors unless this handle may write: not read-only, and no earlier I/O failure.
    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.failed.load(Ordering::SeqCst) {
            return Err(self.previous_io());
        }
        Ok(())
    }

    /// The error that made this handle refuse writes (until the database is reopened), as it
    /// was reported; `None` while it may write. A write whose commit succeeded returns `Ok`
    /// even when the upkeep after it (a flush, removing obsolete files, an automatic
    /// compaction) failed: that failure is latched here instead, and the next write refuses
    /// with it ([`Error::PreviousIo`]).
    pub fn write_failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::SeqCst) {
            return None;
        }
        Some(self.failure.lock().clone().unwrap_or_default())
    }

    fn previous_io(&self) -> Error {
        Error::PreviousIo {
            cause: self.failure.lock().clone().unwrap_or_default(),
        }
    }

    /// Latches `e` as this handle's failure: writes are refused from then on, naming it.
    fn latch(&self, e: &Error) {
        if !matches!(e, Error::PreviousIo { .. }) {
            self.failure.lock().get_or_insert_with(|| e.to_string());
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Latches an I/O or corruption error: the handle refuses writes from then on (the
    /// durable state is unknown; only a reopen, which recovers, may write again). A refusal
    /// from below for an earlier failure is given its cause.
    fn fail<T>(&self, e: Error) -> Result<T> {
        match e {
            Error::PreviousIo { .. } => Err(self.previous_io()),
            Error::Io { .. } | Error::Corruption { .. } => {
                self.latch(&e);
                Err(e)
            }
            e => Err(e),
        }
    }

    /// The end of a write whose commit succeeded: a failure of the upkeep after it is latched
    /// (the next write refuses, naming it) rather than returned, so that an error always
    /// means the write did not commit (or, after a failed fsync, may not have).
    fn after_commit<T>(&self, upkeep: Result<T>) -> Result<()> {
        if let Err(e) = upkeep {
            self.latch(&e);
        }
        Ok(())
    }
}
