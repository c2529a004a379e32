//! The only module with `unsafe` code: mapping immutable files into memory.

#![allow(unsafe_code)]

use std::io;
use std::path::Path;
use std::sync::Arc;

use super::vfs::{Mapped, MappedBytes};

/// Maps the whole of `path` read-only. An empty file maps to an empty slice (mmap of length 0
/// is an error on Linux).
pub(crate) fn map_file(path: &Path) -> io::Result<Mapped> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(Mapped::from_vec(Vec::new()));
    }
    // SAFETY: mhdb maps only files it never modifies in place after they were written and
    // synced: segments and deletion lists are immutable, and the signature log is only
    // appended to beyond the committed length (read through the map only below it) or
    // truncated back to the committed length before any map of it exists in a writer. A WAL
    // file is mapped only while it is replayed at open, before any write: new records go to a
    // new file, and a torn tail is cut after the map is dropped. Another
    // process modifying the file would break this, which the LOCK file rules out for mhdb
    // processes (a reader holds a shared lock, a writer an exclusive one).
    let map = unsafe { memmap2::Mmap::map(&file)? };
    // Lookups are random 4 KB reads; the default readahead (8 MiB here) multiplies cold I/O.
    let _ = map.advise(memmap2::Advice::Random);
    Ok(Mapped::from_backing(Arc::new(FileMap(map))))
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
