//! The only module with `unsafe` code: mapping immutable files into memory.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::vfs::{Mapped, MappedBytes};

/// Maps the whole of `path` read-only. An empty file maps to an empty slice (mmap of length 0
/// is an error on Linux), and so does a file with a hole (see [`has_hole`]) to a copy read
/// with `pread`.
pub(crate) fn map_file(path: &Path) -> io::Result<Mapped> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Mapped::from_vec(Vec::new()));
    }
    if has_hole(&file, len) {
        let len = usize::try_from(len).map_err(|_| io::Error::other("file too large to read"))?;
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, 0)?;
        return Ok(Mapped::from_vec(bytes));
    }
    // SAFETY: mhdb maps only files it never modifies in place after they were written and
    // synced: segments and deletion lists are immutable, and the signature log is only
    // appended to beyond the committed length (read through the map only below it) or
    // truncated back to the committed length before any map of it exists in a writer. Another
    // process modifying the file would break this, which the LOCK file rules out for mhdb
    // processes (a reader holds a shared lock, a writer an exclusive one). (WAL files, which
    // can end in zeros that a full disk never let reach it, are read, not mapped.)
    let map = unsafe { memmap2::Mmap::map(&file)? };
    // Lookups are random 4 KB reads; the default readahead (8 MiB here) multiplies cold I/O.
    let _ = map.advise(memmap2::Advice::Random);
    Ok(Mapped::from_backing(Arc::new(FileMap(map))))
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

    /// A sparse file (a hole, then data) reads back whole, zeros in the hole, without a map.
    #[test]
    fn a_file_with_a_hole_is_read_not_mapped() {
        let dir = std::env::temp_dir().join(format!("mhdb-mmap-hole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sparse");
        let file = std::fs::File::create(&path).unwrap();
        file.write_all_at(b"tail", 1 << 20).unwrap();
        let hole = has_hole(&file, (1 << 20) + 4);
        let dense = dir.join("dense");
        std::fs::write(&dense, vec![1u8; 10_000]).unwrap();
        let map = map_file(&path).unwrap();
        assert_eq!(map.len(), (1 << 20) + 4);
        assert!(map[..1 << 20].iter().all(|&b| b == 0));
        assert_eq!(&map[1 << 20..], b"tail");
        assert!(!has_hole(&std::fs::File::open(&dense).unwrap(), 10_000));
        assert_eq!(map_file(&dense).unwrap().len(), 10_000);
        std::fs::remove_dir_all(&dir).unwrap();
        // Filesystems that keep no holes report none; the ones tests run on (ext4, xfs,
        // tmpfs, overlayfs on them) do.
        eprintln!("hole detected: {hole}");
    }
}
