//! On-disk storage building blocks. Each module is a pure codec or a thin I/O layer; the
//! database layer ([`crate::db`]) composes them.

mod mmap;
pub mod segment;
pub mod simfs;
pub mod vfs;
pub mod wal;
