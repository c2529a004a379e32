//! An in-memory filesystem that knows what would survive a power loss.
//!
//! Every file has *live* bytes (what reads see) and *durable* bytes (what survives a crash):
//! `sync_data` copies live to durable. Directory entries (create, rename, remove) change the
//! live namespace and reach the durable namespace only through `sync_dir` of their directory.
//! [`SimFs::crash_image`] builds the filesystem a restart would find: in
//! [`CrashMode::DurableOnly`] exactly the durable state; in [`CrashMode::TornUnsynced`] also a
//! random part of the unsynced writes: for a file only appended to since its last sync, a
//! random prefix of the appended bytes whose last sector may be torn (zeros or garbage); for
//! overwritten files, each 512-byte sector old or new and any length in between. This is the
//! medium model of `format/commit.md`.
//!
//! [`SimFs::freeze_after_syncs`] stops durability after the n-th sync call, which is how the
//! crash tests place a crash after every sync point of a workload. Directories are implicit:
//! `create_dir_all` always succeeds and directories are durable.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::vfs::{LockMode, Mapped, OpenMode, Vfs, VfsFile, VfsLock};

/// What a crash image keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Only what was synced.
    DurableOnly,
    /// What was synced, plus a random (seeded) part of unsynced writes.
    TornUnsynced {
        /// Seed of the choice.
        seed: u64,
    },
}

#[derive(Debug, Default, Clone)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
}

/// The seeded choices of a torn crash image (xorshift64); without a seed every choice is 0.
struct CrashRng(Option<u64>);

impl CrashRng {
    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        match self.0.as_mut() {
            Some(x) => {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                if n == 0 { 0 } else { *x % n }
            }
            None => 0,
        }
    }
}

/// What a crash leaves of one file: what was synced, and in [`CrashMode::TornUnsynced`]
/// some of what was not.
fn crash_bytes(node: &Inode, mode: CrashMode, rng: &mut CrashRng) -> Vec<u8> {
    let mut bytes = node.durable.clone();
    if mode == CrashMode::DurableOnly || node.live == node.durable {
        return bytes;
    }
    let live = &node.live;
    if live.len() > bytes.len() && live.starts_with(&bytes) {
        torn_append(&mut bytes, live, rng);
    } else {
        torn_overwrite(&mut bytes, live, rng);
    }
    bytes
}

/// Appends persist in order (ext4 data=ordered, XFS): a random prefix of the unsynced
/// extension survives, its last sector possibly torn.
fn torn_append(bytes: &mut Vec<u8>, live: &[u8], rng: &mut CrashRng) {
    let extra = rng.below((live.len() - bytes.len() + 1) as u64) as usize;
    let keep = bytes.len() + extra;
    bytes.extend_from_slice(&live[bytes.len()..keep]);
    if extra > 0 && rng.below(2) == 1 {
        let torn_from = keep - extra.min(1 + rng.below(512) as usize);
        let garbage = rng.below(2) == 1;
        for b in &mut bytes[torn_from..keep] {
            *b = if garbage { rng.below(256) as u8 } else { 0 };
        }
    }
}

/// Overwrites may reach the disk sector by sector, in any order.
fn torn_overwrite(bytes: &mut Vec<u8>, live: &[u8], rng: &mut CrashRng) {
    let lo = bytes.len().min(live.len());
    let hi = bytes.len().max(live.len());
    let len = lo + rng.below((hi - lo + 1) as u64) as usize;
    bytes.resize(len, 0);
    for start in (0..len).step_by(512) {
        let end = (start + 512).min(len);
        if rng.below(2) == 1 {
            for (i, b) in bytes[start..end].iter_mut().enumerate() {
                *b = live.get(start + i).copied().unwrap_or(0);
            }
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    inodes: HashMap<u64, Inode>,
    live_names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    next_inode: u64,
    syncs: u64,
    freeze_after: Option<u64>,
    locks: HashMap<PathBuf, (u32, u32)>, // (exclusive, shared)
    /// Live state when the first sync past the freeze point was called: the crash happens
    /// there, so nothing written later may appear in a crash image.
    crash_snapshot: Option<(HashMap<u64, Inode>, BTreeMap<PathBuf, u64>)>,
}

impl Inner {
    /// Counts a sync; returns whether it may make anything durable.
    fn sync_allowed(&mut self) -> bool {
        self.syncs += 1;
        let allowed = self.freeze_after.is_none_or(|n| self.syncs <= n);
        if !allowed && self.crash_snapshot.is_none() {
            self.crash_snapshot = Some((self.inodes.clone(), self.live_names.clone()));
        }
        allowed
    }
}

/// The simulated filesystem. Cheap to share (`Arc`).
#[derive(Debug, Default)]
pub struct SimFs {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct SimFile {
    fs: Arc<Mutex<Inner>>,
    inode: u64,
    writable: bool,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

impl SimFs {
    /// An empty filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of `sync_data` and `sync_dir` calls so far.
    pub fn sync_count(&self) -> u64 {
        self.inner.lock().syncs
    }

    /// From the `n+1`-th sync call on, nothing more becomes durable.
    pub fn freeze_after_syncs(&self, n: u64) {
        self.inner.lock().freeze_after = Some(n);
    }

    /// The filesystem a restart after a power loss now would find.
    pub fn crash_image(&self, mode: CrashMode) -> SimFs {
        let inner = self.inner.lock();
        let mut rng = CrashRng(match mode {
            CrashMode::DurableOnly => None,
            CrashMode::TornUnsynced { seed } => Some(seed ^ 0x9E37_79B9_7F4A_7C15),
        });
        let mut out = Inner::default();
        let inodes = inner
            .crash_snapshot
            .as_ref()
            .map_or(&inner.inodes, |(nodes, _)| nodes);
        for (path, ino) in &inner.durable_names {
            let Some(node) = inodes.get(ino) else {
                continue;
            };
            let bytes = crash_bytes(node, mode, &mut rng);
            let id = out.next_inode;
            out.next_inode += 1;
            out.inodes.insert(
                id,
                Inode {
                    live: bytes.clone(),
                    durable: bytes,
                },
            );
            out.live_names.insert(path.clone(), id);
            out.durable_names.insert(path.clone(), id);
        }
        SimFs {
            inner: Arc::new(Mutex::new(out)),
        }
    }

    /// Live contents of a file (for tests that damage files).
    pub fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let inner = self.inner.lock();
        let ino = inner.live_names.get(path).ok_or_else(|| not_found(path))?;
        Ok(inner
            .inodes
            .get(ino)
            .map(|n| n.live.clone())
            .unwrap_or_default())
    }

    /// Replaces a file's contents, live and durable (for tests that damage files).
    pub fn write_file_durably(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut inner = self.inner.lock();
        let ino = *inner.live_names.get(path).ok_or_else(|| not_found(path))?;
        if let Some(node) = inner.inodes.get_mut(&ino) {
            node.live = bytes.to_vec();
            node.durable = bytes.to_vec();
        }
        Ok(())
    }
}

impl VfsFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let inner = self.fs.lock();
        let node = inner
            .inodes
            .get(&self.inode)
            .ok_or_else(|| io::Error::other("stale file"))?;
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| node.live.get(start..end))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "file opened read-only",
            ));
        }
        let mut inner = self.fs.lock();
        let node = inner
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| io::Error::other("stale file"))?;
        let start = offset as usize;
        let end = start + buf.len();
        if node.live.len() < end {
            node.live.resize(end, 0);
        }
        node.live[start..end].copy_from_slice(buf);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let inner = self.fs.lock();
        Ok(inner
            .inodes
            .get(&self.inode)
            .map_or(0, |n| n.live.len() as u64))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "file opened read-only",
            ));
        }
        let mut inner = self.fs.lock();
        if let Some(node) = inner.inodes.get_mut(&self.inode) {
            node.live.resize(len as usize, 0);
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut inner = self.fs.lock();
        if inner.sync_allowed()
            && let Some(node) = inner.inodes.get_mut(&self.inode)
        {
            node.durable = node.live.clone();
        }
        Ok(())
    }
}

#[derive(Debug)]
struct SimLock {
    fs: Arc<Mutex<Inner>>,
    path: PathBuf,
    mode: LockMode,
}

impl VfsLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut inner = self.fs.lock();
        if let Some(entry) = inner.locks.get_mut(&self.path) {
            match self.mode {
                LockMode::Exclusive => entry.0 = entry.0.saturating_sub(1),
                LockMode::Shared => entry.1 = entry.1.saturating_sub(1),
            }
        }
    }
}

impl Vfs for SimFs {
    fn create_dir_all(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut inner = self.inner.lock();
        let existing = inner.live_names.get(path).copied();
        let inode = match (mode, existing) {
            (OpenMode::Read | OpenMode::ReadWrite, Some(ino)) => ino,
            (OpenMode::Read | OpenMode::ReadWrite, None) => return Err(not_found(path)),
            (OpenMode::CreateNew, Some(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ));
            }
            (OpenMode::CreateOrTruncate, Some(ino)) => {
                if let Some(node) = inner.inodes.get_mut(&ino) {
                    node.live.clear();
                }
                ino
            }
            (OpenMode::CreateNew | OpenMode::CreateOrTruncate, None) => {
                let ino = inner.next_inode;
                inner.next_inode += 1;
                inner.inodes.insert(ino, Inode::default());
                inner.live_names.insert(path.to_path_buf(), ino);
                ino
            }
        };
        Ok(Arc::new(SimFile {
            fs: self.inner.clone(),
            inode,
            writable: mode != OpenMode::Read,
        }))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let inner = self.inner.lock();
        Ok(inner
            .live_names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut inner = self.inner.lock();
        if let Some(ino) = inner.live_names.remove(from) {
            inner.live_names.insert(to.to_path_buf(), ino);
            return Ok(());
        }
        // A directory (implicit here): every name below it moves.
        let below: Vec<PathBuf> = inner
            .live_names
            .keys()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        if below.is_empty() {
            return Err(not_found(from));
        }
        for old in below {
            if let (Some(ino), Ok(rest)) = (inner.live_names.remove(&old), old.strip_prefix(from)) {
                inner.live_names.insert(to.join(rest), ino);
            }
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut inner = self.inner.lock();
        inner
            .live_names
            .remove(path)
            .ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        // Directories are implicit: one is gone once no name is below it.
        let inner = self.inner.lock();
        if inner.live_names.keys().any(|p| p.starts_with(path)) {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                "directory not empty",
            ));
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut inner = self.inner.lock();
        if !inner.sync_allowed() {
            return Ok(());
        }
        let in_dir = |p: &PathBuf| p.parent() == Some(dir);
        let durable: Vec<(PathBuf, u64)> = inner
            .live_names
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        inner.durable_names.retain(|p, _| !in_dir(p));
        inner.durable_names.extend(durable);
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.inner.lock().live_names.contains_key(path))
    }

    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>> {
        let mut inner = self.inner.lock();
        let entry = inner.locks.entry(path.to_path_buf()).or_insert((0, 0));
        let blocked = match mode {
            LockMode::Exclusive => entry.0 > 0 || entry.1 > 0,
            LockMode::Shared => entry.0 > 0,
        };
        if blocked {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "lock is held"));
        }
        match mode {
            LockMode::Exclusive => entry.0 += 1,
            LockMode::Shared => entry.1 += 1,
        }
        Ok(Box::new(SimLock {
            fs: self.inner.clone(),
            path: path.to_path_buf(),
            mode,
        }))
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapped> {
        let inner = self.inner.lock();
        let ino = inner.live_names.get(path).ok_or_else(|| not_found(path))?;
        let bytes = inner
            .inodes
            .get(ino)
            .map(|n| n.live.clone())
            .unwrap_or_default();
        Ok(Mapped::from_vec(bytes))
    }
}

/// A [`Vfs`] wrapper that fails the n-th mutating or syncing call (and, optionally, every
/// later one), to test that I/O errors are reported, latched, and lose nothing committed.
#[derive(Debug)]
pub struct FaultFs<V: Vfs> {
    inner: V,
    calls: AtomicU64,
    fail_at: u64,
    sticky: bool,
    errno: i32,
    /// Also counts (and fails) the calls that load files: mapping one, listing a directory.
    loads: bool,
}

impl<V: Vfs> FaultFs<V> {
    /// Fails call number `fail_at` (1-based; 0 never fails) with OS error `errno` (e.g. 5 EIO,
    /// 28 ENOSPC); with `sticky`, every later call fails too.
    pub fn new(inner: V, fail_at: u64, errno: i32, sticky: bool) -> Arc<Self> {
        Self::build(inner, fail_at, errno, sticky, false)
    }

    /// As [`FaultFs::new`] (not sticky), counting the calls that load files too: mapping a
    /// file (ENOMEM or too many maps, say) and listing a directory.
    pub fn with_loads(inner: V, fail_at: u64, errno: i32) -> Arc<Self> {
        Self::build(inner, fail_at, errno, false, true)
    }

    fn build(inner: V, fail_at: u64, errno: i32, sticky: bool, loads: bool) -> Arc<Self> {
        Arc::new(FaultFs {
            inner,
            calls: AtomicU64::new(0),
            fail_at,
            sticky,
            errno,
            loads,
        })
    }

    /// Mutating or syncing calls so far.
    pub fn io_count(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The wrapped filesystem.
    pub fn inner(&self) -> &V {
        &self.inner
    }

    fn tick(&self) -> io::Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let hit = self.fail_at != 0 && (n == self.fail_at || (self.sticky && n > self.fail_at));
        if hit {
            Err(io::Error::from_raw_os_error(self.errno))
        } else {
            Ok(())
        }
    }
}

#[derive(Debug)]
struct FaultFile<V: Vfs> {
    fs: Arc<FaultFs<V>>,
    file: Arc<dyn VfsFile>,
}

impl<V: Vfs> VfsFile for FaultFile<V> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.fs.tick()?;
        self.file.write_all_at(buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.fs.tick()?;
        self.file.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.fs.tick()?;
        self.file.sync_data()
    }
}

/// `Arc<FaultFs<V>>` is the [`Vfs`]: files keep a handle to the counter.
impl<V: Vfs> Vfs for Arc<FaultFs<V>> {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        if matches!(mode, OpenMode::CreateNew | OpenMode::CreateOrTruncate) {
            self.tick()?;
        }
        let file = self.inner.open(path, mode)?;
        Ok(Arc::new(FaultFile {
            fs: self.clone(),
            file,
        }))
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        if self.loads {
            self.tick()?;
        }
        self.inner.list_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick()?;
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.tick()?;
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.tick()?;
        self.inner.remove_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.tick()?;
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>> {
        self.inner.lock(path, mode)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapped> {
        if self.loads {
            self.tick()?;
        }
        self.inner.map_readonly(path)
    }
}

/// Lets an `Arc<SimFs>` be wrapped by [`FaultFs`] while the test keeps a handle to it.
impl Vfs for Arc<SimFs> {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.as_ref().create_dir_all(path)
    }
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        self.as_ref().open(path, mode)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.as_ref().list_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.as_ref().rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.as_ref().remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.as_ref().remove_dir(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.as_ref().sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.as_ref().exists(path)
    }
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>> {
        self.as_ref().lock(path, mode)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapped> {
        self.as_ref().map_readonly(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_data_and_names_are_lost() {
        let fs = SimFs::new();
        let dir = Path::new("/d");
        let a = dir.join("a");
        let f = fs.open(&a, OpenMode::CreateNew).unwrap();
        f.write_all_at(b"hello", 0).unwrap();
        // Neither data nor name synced: gone.
        assert!(!fs.crash_image(CrashMode::DurableOnly).exists(&a).unwrap());
        f.sync_data().unwrap();
        // Data synced, name not: still gone.
        assert!(!fs.crash_image(CrashMode::DurableOnly).exists(&a).unwrap());
        fs.sync_dir(dir).unwrap();
        f.write_all_at(b" world", 5).unwrap();
        let img = fs.crash_image(CrashMode::DurableOnly);
        assert_eq!(img.read_file(&a).unwrap(), b"hello");
        // A torn image keeps at most what was written, and at least what was synced.
        for seed in 0..20 {
            let t = fs
                .crash_image(CrashMode::TornUnsynced { seed })
                .read_file(&a)
                .unwrap();
            assert!(t.len() >= 5 && t.len() <= 11);
            assert_eq!(&t[..5], b"hello");
        }
    }

    #[test]
    fn unsynced_rename_is_lost_and_freeze_stops_durability() {
        let fs = SimFs::new();
        let dir = Path::new("/d");
        let f = fs.open(&dir.join("tmp"), OpenMode::CreateNew).unwrap();
        f.write_all_at(b"x", 0).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(dir).unwrap();
        fs.rename(&dir.join("tmp"), &dir.join("final")).unwrap();
        let img = fs.crash_image(CrashMode::DurableOnly);
        assert!(img.exists(&dir.join("tmp")).unwrap());
        assert!(!img.exists(&dir.join("final")).unwrap());
        fs.freeze_after_syncs(fs.sync_count());
        fs.sync_dir(dir).unwrap();
        let img = fs.crash_image(CrashMode::DurableOnly);
        assert!(!img.exists(&dir.join("final")).unwrap());
        assert_eq!(fs.sync_count(), 3);
    }

    #[test]
    fn locks_conflict() {
        let fs = SimFs::new();
        let p = Path::new("/d/LOCK");
        let x = fs.lock(p, LockMode::Exclusive).unwrap();
        assert_eq!(
            fs.lock(p, LockMode::Shared).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(x);
        let _s1 = fs.lock(p, LockMode::Shared).unwrap();
        let _s2 = fs.lock(p, LockMode::Shared).unwrap();
        assert!(fs.lock(p, LockMode::Exclusive).is_err());
    }

    #[test]
    fn fault_fs_fails_the_nth_call() {
        let sim = Arc::new(SimFs::new());
        let fs = FaultFs::new(sim.clone(), 2, 28, false);
        let f = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap(); // call 1
        let err = f.write_all_at(b"x", 0).unwrap_err(); // call 2
        assert_eq!(err.raw_os_error(), Some(28));
        f.write_all_at(b"x", 0).unwrap(); // call 3
        assert_eq!(fs.io_count(), 3);
    }
}
