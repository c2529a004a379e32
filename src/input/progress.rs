//! How far a reader is through its inputs, for a progress display with a percent and an
//! estimated time left: a position in bytes of the input files as stored, against their total
//! size when it is known.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A position in bytes through inputs of a total size (`None` when a size is unknown: a pipe,
/// standard input). Clones share it, so a display may read it on one thread while a reader
/// advances it on another.
///
/// A compressed file counts its compressed bytes, the position in the file as stored; a
/// Parquet or Arrow file counts the share of its size its rows read so far stand for.
#[derive(Clone, Debug)]
pub struct Progress {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    total: Option<u64>,
    position: AtomicU64,
}

impl Progress {
    /// At the start of inputs of `total` bytes.
    pub fn new(total: Option<u64>) -> Progress {
        Progress {
            shared: Arc::new(Shared {
                total,
                position: AtomicU64::new(0),
            }),
        }
    }

    /// The inputs' total size in bytes, if every input has a size.
    pub fn total(&self) -> Option<u64> {
        self.shared.total
    }

    /// The bytes read so far; never more than the total (a file that grew while it was read
    /// does not take the position past the end).
    pub fn position(&self) -> u64 {
        let at = self.shared.position.load(Ordering::Relaxed);
        self.shared.total.map_or(at, |total| at.min(total))
    }

    /// Counts `bytes` more read.
    pub fn advance(&self, bytes: u64) {
        self.shared.position.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Sets the position: a file's end once it is read, or a place within it.
    pub fn set(&self, position: u64) {
        self.shared.position.store(position, Ordering::Relaxed);
    }

    /// `reader`, advancing this position by every byte read through it.
    pub fn counting<R: Read>(&self, reader: R) -> Counting<R> {
        Counting {
            inner: reader,
            progress: self.clone(),
        }
    }
}

/// A reader that advances a [`Progress`] by the bytes read through it.
pub struct Counting<R> {
    inner: R,
    progress: Progress,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

/// `size` scaled by the share `done / of` (rows read of a file's rows), rounded down; all of
/// it when `of` is zero.
pub(super) fn share(size: u64, done: u64, of: u64) -> u64 {
    if of == 0 {
        return size;
    }
    (u128::from(size) * u128::from(done.min(of)) / u128::from(of)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_is_read_and_stops_at_the_total() {
        let progress = Progress::new(Some(10));
        let mut out = Vec::new();
        progress
            .counting(&b"0123456"[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(progress.position(), 7);
        progress.advance(9);
        assert_eq!(progress.position(), 10);
        progress.set(4);
        assert_eq!(
            (progress.clone().position(), progress.total()),
            (4, Some(10))
        );
        assert_eq!(share(1000, 1, 3), 333);
        assert_eq!(share(1000, 5, 3), 1000);
        assert_eq!(share(u64::MAX, 1, 2), u64::MAX / 2);
        assert_eq!(share(7, 0, 0), 7);
    }
}
