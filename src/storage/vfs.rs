//! The one trait all of mhdb's file I/O goes through, plus the real implementation
//! ([`StdFs`]). Tests put a crash simulator and a fault injector behind the same trait
//! (`storage::sim`, built with the `sim` cargo feature).

use std::fmt::Debug;
use std::io;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Existing file, read only.
    Read,
    /// Existing file, read and write.
    ReadWrite,
    /// New file; fails if it exists.
    CreateNew,
    /// Create, or truncate an existing file to zero length.
    CreateOrTruncate,
}

/// A lock on a lock file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// One holder (the writer process).
    Exclusive,
    /// Many holders (read-only openers).
    Shared,
}

/// A held lock; released on drop.
pub trait VfsLock: Send + Sync + Debug {}

/// An open file. Positional I/O only, so one handle can be shared between threads.
pub trait VfsFile: Send + Sync + Debug {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Current length.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Truncates or extends (with zeros).
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// `fdatasync`: the file's data and length are durable when this returns.
    fn sync_data(&self) -> io::Result<()>;
    /// Starts writing `offset..offset + len` to disk without waiting (a hint; durability
    /// still comes from [`VfsFile::sync_data`] only).
    fn start_writeback(&self, _offset: u64, _len: u64) {}
}

/// What backs a [`Mapped`]: the bytes, and a way to ask for pages ahead of use.
pub(crate) trait MappedBytes: Send + Sync {
    fn bytes(&self) -> &[u8];
    /// Starts reading `offset..offset + len` into memory without waiting for it (a hint:
    /// errors are ignored). In-memory bytes need nothing.
    fn will_need(&self, _offset: usize, _len: usize) {}
}

impl MappedBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Bytes of a whole file, mapped read-only (or copied, on simulated filesystems).
#[derive(Clone)]
pub struct Mapped(Arc<dyn MappedBytes>);

impl Mapped {
    /// Wraps owned bytes.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Mapped(Arc::new(bytes))
    }

    pub(crate) fn from_backing(inner: Arc<dyn MappedBytes>) -> Self {
        Mapped(inner)
    }
}

/// Asking for pages before reading them, so that the reads of a cold lookup overlap instead
/// of waiting for one another.
pub trait Prefetch {
    /// Starts reading `offset..offset + len` (clamped to the bytes) without waiting.
    fn prefetch(&self, offset: usize, len: usize);
}

/// Byte ranges of one file to prefetch, merged before they are asked for: a cold query
/// prefetches thousands of records (signatures, doc-table entries, keys), most of them on the
/// same or neighbouring pages, and one `madvise` call per record cost more than the reads it
/// started (7,000 calls, ~10 ms, for a hot query's candidates).
#[derive(Debug, Default)]
pub struct PrefetchBatch {
    ranges: Vec<(usize, usize)>,
}

impl PrefetchBatch {
    /// Ranges this close are asked for as one: reading the pages between them costs less than
    /// another call.
    const MERGE_GAP: usize = 64 << 10;

    /// Adds `offset..offset + len`.
    pub fn add(&mut self, offset: usize, len: usize) {
        if len > 0 {
            self.ranges.push((offset, offset.saturating_add(len)));
        }
    }

    /// Prefetches the ranges added, merged, from `bytes`, and forgets them.
    pub fn issue(&mut self, bytes: &impl Prefetch) {
        for (start, end) in self.merged() {
            bytes.prefetch(start, end - start);
        }
        self.ranges.clear();
    }

    /// The ranges added, sorted, with those that overlap or lie within [`Self::MERGE_GAP`] of
    /// each other joined.
    fn merged(&mut self) -> Vec<(usize, usize)> {
        self.ranges.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::new();
        for &(start, end) in &self.ranges {
            match out.last_mut() {
                Some(last) if start <= last.1.saturating_add(Self::MERGE_GAP) => {
                    last.1 = last.1.max(end);
                }
                _ => out.push((start, end)),
            }
        }
        out
    }
}

impl Prefetch for Mapped {
    fn prefetch(&self, offset: usize, len: usize) {
        let total = self.0.bytes().len();
        if offset < total {
            self.0.will_need(offset, len.min(total - offset));
        }
    }
}

impl Prefetch for Vec<u8> {
    fn prefetch(&self, _offset: usize, _len: usize) {}
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} bytes)", self.0.bytes().len())
    }
}

/// A filesystem.
pub trait Vfs: Send + Sync + Debug + 'static {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Opens a file.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>>;
    /// File names in a directory, sorted.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Takes a lock on `path`: a directory (locked in place, so the lock needs no write
    /// permission and cannot be stolen by deleting a file), or a lock file (created if
    /// missing). `WouldBlock` if held incompatibly. The lock goes with its holder: a process
    /// that dies releases it.
    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>>;
    /// The whole file, read-only. Only used on immutable, fully synced files.
    fn map_readonly(&self, path: &Path) -> io::Result<Mapped>;
    /// Bytes still free for writing on the filesystem holding `path`, where the filesystem
    /// says (`None`: unknown, as in a simulated one).
    fn available_space(&self, _path: &Path) -> io::Result<Option<u64>> {
        Ok(None)
    }
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(std::fs::File);

impl VfsFile for StdFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.0, buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn start_writeback(&self, offset: u64, len: u64) {
        super::mmap::start_writeback(&self.0, offset, len);
    }
}

#[derive(Debug)]
struct StdLock(#[allow(dead_code)] std::fs::File);

/// Who holds a lock that could not be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockHolder {
    /// This process, through another open handle (a second `Db::open` of the same database).
    ThisProcess,
    /// The process with this id.
    Process(u32),
    /// Not known (the system does not say, or said nothing that matched).
    Unknown,
}

/// The payload of the `WouldBlock` error of [`Vfs::lock`]: who holds the lock.
#[derive(Debug)]
pub struct LockHeld(pub LockHolder);

impl std::fmt::Display for LockHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            LockHolder::ThisProcess => f.write_str("lock is held by this process"),
            LockHolder::Process(pid) => write!(f, "lock is held by process {pid}"),
            LockHolder::Unknown => f.write_str("lock is held by another process"),
        }
    }
}

impl std::error::Error for LockHeld {}

/// Who holds the flock(2) lock on `file`, as Linux lists it in `/proc/locks` (a line per
/// lock: `1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`, the device numbers
/// in hex); [`LockHolder::Unknown`] elsewhere. A second handle of this process conflicts
/// with the first as another process would (each open file description locks on its own),
/// so telling the two apart is what lets the error say "close the other handle".
fn lock_holder(file: &std::fs::File) -> LockHolder {
    use std::os::unix::fs::MetadataExt;
    let (Ok(meta), Ok(locks)) = (file.metadata(), std::fs::read_to_string("/proc/locks")) else {
        return LockHolder::Unknown;
    };
    let dev = meta.dev();
    let wanted = format!(
        "{:02x}:{:02x}:{}",
        libc::major(dev),
        libc::minor(dev),
        meta.ino()
    );
    let holder = locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Waiters are listed with "->" after the id; only holders count.
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, devino, ..] if *devino == wanted => pid.parse::<u32>().ok(),
            _ => None,
        }
    });
    match holder {
        Some(pid) if pid == std::process::id() => LockHolder::ThisProcess,
        Some(pid) => LockHolder::Process(pid),
        None => LockHolder::Unknown,
    }
}

impl VfsLock for StdLock {}

impl Drop for StdLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl Vfs for StdFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let mut o = std::fs::OpenOptions::new();
        match mode {
            OpenMode::Read => o.read(true),
            OpenMode::ReadWrite => o.read(true).write(true),
            OpenMode::CreateNew => o.read(true).write(true).create_new(true),
            OpenMode::CreateOrTruncate => o.read(true).write(true).create(true).truncate(true),
        };
        Ok(Arc::new(StdFile(o.open(path)?)))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn lock(&self, path: &Path, mode: LockMode) -> io::Result<Box<dyn VfsLock>> {
        // flock(2) on an open file description: released by the kernel when the holder
        // exits, however it exits, so a stale lock is never left to guess about.
        let file = if path.is_dir() {
            std::fs::File::open(path)?
        } else {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?
        };
        let got = match mode {
            LockMode::Exclusive => file.try_lock(),
            LockMode::Shared => file.try_lock_shared(),
        };
        match got {
            Ok(()) => Ok(Box::new(StdLock(file))),
            Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                LockHeld(lock_holder(&file)),
            )),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn available_space(&self, path: &Path) -> io::Result<Option<u64>> {
        super::mmap::available_space(path).map(Some)
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapped> {
        super::mmap::map_file(path)
    }
}

/// Reads a whole (small) file: CURRENT, a manifest, a file being copied.
pub(crate) fn read_file(vfs: &dyn Vfs, path: &Path) -> crate::Result<Vec<u8>> {
    let file = vfs
        .open(path, OpenMode::Read)
        .map_err(crate::Error::io_on(path, "open"))?;
    let len = file.len().map_err(crate::Error::io_on(path, "stat"))?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(crate::Error::io_on(path, "read"))?;
    Ok(buf)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Records what it is asked to prefetch.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<(usize, usize)>>);

    impl Prefetch for Recorder {
        fn prefetch(&self, offset: usize, len: usize) {
            self.0.borrow_mut().push((offset, len));
        }
    }

    /// A batch asks for every byte it was given, once per run of ranges closer than the merge
    /// gap, in order; empty ranges ask for nothing; issuing empties it.
    #[test]
    fn prefetch_batch_merges_near_ranges_and_covers_every_byte() {
        let gap = PrefetchBatch::MERGE_GAP;
        let mut batch = PrefetchBatch::default();
        let given = [
            (5 * gap, 100),
            (0, 256),
            (100, 10),
            (256 + gap, 8),
            (256 + gap + 9, 0),
            (5 * gap + 50, 10),
            (20 * gap, 1),
        ];
        for &(o, l) in &given {
            batch.add(o, l);
        }
        let rec = Recorder::default();
        batch.issue(&rec);
        let asked = rec.0.borrow().clone();
        assert_eq!(
            asked,
            vec![(0, 256 + gap + 8), (5 * gap, 100), (20 * gap, 1)]
        );
        for &(o, l) in given.iter().filter(|&&(_, l)| l > 0) {
            assert!(asked.iter().any(|&(a, n)| a <= o && o + l <= a + n));
        }
        batch.issue(&rec);
        assert_eq!(rec.0.borrow().len(), 3);
    }
}
