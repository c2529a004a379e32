//! On-disk storage building blocks. Each module is a pure codec or a thin I/O layer; the
//! database layer ([`crate::db`]) composes them.

mod mmap;
pub mod segment;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod vfs;
pub mod wal;
