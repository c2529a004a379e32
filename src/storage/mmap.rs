//! The only module with `unsafe` code: mapping immutable files into memory.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::vfs::{Mapped, MappedBytes};

/// Maps the whole of `path` read-only, or reads it (see [`FileBytes`]).
pub(crate) fn map_file(path: &Path) -> io::Result<Mapped> {
    Ok(match map_or_read(path)? {
        FileBytes::Read(bytes) => Mapped::from_vec(bytes),
        FileBytes::Mapped(map) => Mapped::from_backing(Arc::new(FileMap(map))),
    })
}

/// How [`map_file`] got a file's bytes.
enum FileBytes {
    /// Read with `pread` into memory: an empty file (mmap of length 0 is an error on Linux),
    /// or a file with a hole (see [`has_hole`]).
    Read(Vec<u8>),
    /// Mapped read-only: every other file.
    Mapped(memmap2::Mmap),
}

/// The whole of `path`, mapped unless mapping it is unsafe or impossible ([`FileBytes`]).
fn map_or_read(path: &Path) -> io::Result<FileBytes> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(FileBytes::Read(Vec::new()));
    }
    if has_hole(&file, len) {
        let len = usize::try_from(len).map_err(|_| io::Error::other("file too large to read"))?;
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, 0)?;
        return Ok(FileBytes::Read(bytes));
    }
    // SAFETY: the map is sound while no one changes the file's bytes or length. mhdb maps only
    // files it never changes once written: segments and deletion lists are each written whole
    // under a new name (`OpenMode::CreateNew`, a name never used before) and synced before a
    // manifest names them, are never opened for writing again and never truncated (only WAL
    // files are opened read-write or cut), and are removed by unlinking, which leaves an
    // existing map intact; a version-1 signature log is only read (version 1 is never
    // written). No lock is involved: readers take none. Another program truncating a mapped
    // file would make a read past its new end raise SIGBUS, which kills the process, and one
    // rewriting it in place would change bytes after their checksum was checked; both are
    // outside the fault model (RELIABILITY.md), and mhdb installs no handler for them.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    // Lookups are random 4 KB reads; the default readahead (8 MiB here) multiplies cold I/O.
    let _ = map.advise(memmap2::Advice::Random);
    Ok(FileBytes::Mapped(map))
}

/// Whether `file` (`len` bytes) has a hole: a range no write ever allocated. Files mhdb wrote
/// itself have none (each is written whole before it is named), but a copy made sparse
/// (`cp --sparse=always`, `rsync -S`, a restore) turns runs of zeros, such as the records of
/// documents deleted before their flush, into holes. Reading a hole through a mapping on a full
/// tmpfs must allocate a page, fails, and raises SIGBUS, which kills the process; `pread` reads
/// it as zeros without allocating, so such a file is read instead of mapped.
fn has_hole(file: &std::fs::File, len: u64) -> bool {
    // SAFETY: lseek on a descriptor this function borrows, open for its whole duration; it
    // touches no memory. SEEK_HOLE from 0 returns the offset of the first hole, which is the
    // file's length when it has none (and on filesystems that do not track holes). It moves
    // the descriptor's offset, which nothing uses: every read is positional.
    let hole = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_HOLE) };
    u64::try_from(hole).is_ok_and(|hole| hole < len)
}

/// Major page faults (reads of mapped pages that had to wait for the disk) of the calling
/// thread so far; `None` where the system does not say. Queries use it to tell a cold page
/// cache from a thread that merely lost its core on a busy machine (both make a lookup slow;
/// only the first is worth prefetching for).
pub(crate) fn thread_major_faults() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one `rusage` into the pointer, a valid, writable, properly
        // aligned place for one (zero-initialized, so every field is a valid integer even if
        // it wrote none); RUSAGE_THREAD reads the calling thread's counters, nothing shared.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: zero-initialized above, and every field of `rusage` is an integer.
        let usage = unsafe { usage.assume_init() };
        u64::try_from(usage.ru_majflt).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Asks the OS to start writing the dirty pages of `offset..offset + len` of `file` to disk,
/// without waiting (a hint: errors are ignored, and only a later `fdatasync` makes anything
/// durable). A large file's writeback then overlaps the writing of the rest of it, so the
/// final sync waits for its last pieces only.
pub(crate) fn start_writeback(file: &std::fs::File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: sync_file_range on a descriptor `file` keeps open for the whole call; it
        // reads and writes no memory of this process, only queues the range's dirty pages
        // for writeback (SYNC_FILE_RANGE_WRITE alone neither waits nor changes what a later
        // fdatasync guarantees).
        let _ = unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// Bytes an unprivileged writer may still use on the filesystem holding `path`
/// (`statvfs`: available blocks times the fragment size).
pub(crate) fn available_space(path: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: statvfs reads the NUL-terminated path `c_path` owns for the whole call and
    // writes one `statvfs` into the pointer, a valid, writable, aligned place for one
    // (zero-initialized, so every field is a valid integer even where it writes none).
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialized above, and every field of `statvfs` is an integer.
    let stat = unsafe { stat.assume_init() };
    // Both are u64 on 64-bit Linux, narrower elsewhere.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)))
}

/// Asks the OS to start reading the pages under `bytes` from disk without waiting
/// (`MADV_WILLNEED`; a hint: nothing is read into the program). Mapped files are advised
/// `MADV_RANDOM`, so a fault reads its one page; a long sequential read (a scan of a band, a
/// run of signatures) asks for its next pages this way, so that the disk serves them in
/// large reads ahead of the loop instead of one page per fault. Whether the OS took the
/// advice (callers ignore it; anonymous memory takes it and does nothing).
pub(crate) fn read_ahead(bytes: &[u8]) -> bool {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        if bytes.is_empty() {
            return true;
        }
        let start = bytes.as_ptr() as usize;
        let aligned = start - start % PAGE;
        let len = bytes.len() + (start - aligned);
        // SAFETY: madvise(MADV_WILLNEED) only schedules reads of the pages of the range; it
        // changes no byte and no mapping, so it cannot break what any reference to this
        // memory assumes. The range starts on the page holding `bytes`' first byte and ends
        // on the page holding its last, all part of the live allocation or mapping `bytes`
        // borrows from (pages are the smallest unit either is made of).
        let rc = unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_WILLNEED) };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = bytes;
        true
    }
}

/// Asks the CPU to start loading every cache line of `bytes` (a hint: it waits for nothing,
/// reads nothing into the program and never faults). A loop over scattered records that
/// prefetches a few records ahead has their memory reads overlap instead of queueing.
#[inline]
pub(crate) fn prefetch_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in lines_of(bytes) {
        // SAFETY: PREFETCHT0 (SSE, part of every x86-64 CPU) only hints the cache: it does not
        // dereference the pointer in the language's sense, cannot fault, and the pointer is
        // into a live slice anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// The bytes from a point in each cache line `bytes` touches on: from its start, then from
/// each line boundary within it. (A range that starts inside a line reaches one line further
/// than its length says: a 64-byte filter block at an unaligned offset spans two.)
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    const LINE: usize = 64;
    let first_boundary = LINE - bytes.as_ptr() as usize % LINE;
    let starts = std::iter::once(0).chain((first_boundary..bytes.len()).step_by(LINE));
    starts.filter_map(|i| bytes.get(i..).filter(|rest| !rest.is_empty()))
}

struct FileMap(memmap2::Mmap);

impl MappedBytes for FileMap {
    fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn will_need(&self, offset: usize, len: usize) {
        // MADV_WILLNEED on a file mapping starts the reads and returns without waiting.
        let _ = self.0.advise_range(memmap2::Advice::WillNeed, offset, len);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A prefetch asks for every cache line a range touches, each once, whatever the range's
    /// offset in its first line (a 64-byte block at an unaligned offset is two lines).
    #[test]
    fn prefetch_covers_every_line_a_range_touches() {
        let buffer = vec![0u8; 1024];
        let base = buffer.as_ptr() as usize;
        let aligned = (64 - base % 64) % 64;
        for start in aligned..aligned + 64 {
            for len in [0, 1, 8, 63, 64, 65, 128, 200] {
                let bytes = &buffer[start..start + len];
                let line = |p: usize| p / 64;
                let got: Vec<usize> = lines_of(bytes).map(|l| line(l.as_ptr() as usize)).collect();
                let first = line(bytes.as_ptr() as usize);
                let want: Vec<usize> = match len {
                    0 => vec![],
                    _ => (first..=line(bytes.as_ptr() as usize + len - 1)).collect(),
                };
                assert_eq!(got, want, "start {} len {len}", start - aligned);
            }
        }
    }

    /// The thread's major-fault count is readable here and never goes down.
    #[test]
    #[cfg(target_os = "linux")]
    fn major_faults_are_counted_per_thread() {
        let a = thread_major_faults().unwrap();
        let _ = std::fs::read("/proc/self/stat");
        assert!(thread_major_faults().unwrap() >= a);
    }

    /// A sparse file (a hole, then data) is read, not mapped, and reads back whole, zeros in
    /// the hole; a dense file is mapped. The temporary directory's filesystem must report
    /// holes (ext4, xfs, btrfs and tmpfs do; set TMPDIR elsewhere).
    #[test]
    fn a_file_with_a_hole_is_read_not_mapped() {
        let dir = std::env::temp_dir().join(format!("mhdb-mmap-hole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sparse");
        let file = std::fs::File::create(&path).unwrap();
        file.write_all_at(b"tail", 1 << 20).unwrap();
        assert!(
            has_hole(&file, (1 << 20) + 4),
            "{} reports no hole in a sparse file",
            dir.display()
        );
        let FileBytes::Read(bytes) = map_or_read(&path).unwrap() else {
            panic!("a file with a hole was mapped");
        };
        assert_eq!(bytes.len(), (1 << 20) + 4);
        assert!(bytes[..1 << 20].iter().all(|&b| b == 0));
        assert_eq!(&bytes[1 << 20..], b"tail");
        assert_eq!(map_file(&path).unwrap()[..], bytes[..]);

        let dense = dir.join("dense");
        std::fs::write(&dense, vec![1u8; 10_000]).unwrap();
        assert!(!has_hole(&std::fs::File::open(&dense).unwrap(), 10_000));
        let FileBytes::Mapped(map) = map_or_read(&dense).unwrap() else {
            panic!("a file without a hole was read, not mapped");
        };
        assert_eq!(map[..], [1u8; 10_000]);
        std::fs::write(dir.join("empty"), b"").unwrap();
        assert!(matches!(map_or_read(&dir.join("empty")), Ok(FileBytes::Read(b)) if b.is_empty()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Read-ahead is advice the OS accepts for any piece of a mapped file or of memory: its
    /// range is widened to whole pages inside the mapping (a range it did not accept, unaligned
    /// or past the mapping, would be refused with EINVAL or ENOMEM).
    #[test]
    #[cfg(target_os = "linux")]
    fn read_ahead_is_accepted_for_any_piece_of_a_mapping() {
        let dir = std::env::temp_dir().join(format!("mhdb-mmap-ahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("file");
        let len = 3 * 4096 + 100;
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let FileBytes::Mapped(map) = map_or_read(&path).unwrap() else {
            panic!("a dense file was not mapped");
        };
        for (from, to) in [
            (0, len),
            (1, 2),
            (4095, 4097),
            (5000, len),
            (len - 1, len),
            (7, 7),
        ] {
            assert!(
                read_ahead(&map[from..to]),
                "{from}..{to} of a mapping refused"
            );
            assert!(
                read_ahead(&bytes[from..to]),
                "{from}..{to} of a Vec refused"
            );
        }
        assert_eq!(map[..], bytes[..]);
        drop(map);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
