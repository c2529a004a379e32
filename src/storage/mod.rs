//! On-disk storage: one module per file kind of `format/`, each the only codec for its files,
//! and the I/O layer they all go through. Nothing here knows about signatures or the database:
//! the database layer ([`crate::db`]) composes these pieces.
//!
//! | module | file kind | spec |
//! | --- | --- | --- |
//! | `names` | every file name of a database directory | `format/README.md` |
//! | `manifest` | `CURRENT`, `MANIFEST-<gen>` | `format/manifest.md` |
//! | `deletions` | `del-<id>.del` | `format/manifest.md` |
//! | `siglog` | `signatures.log` | `format/siglog.md` |
//! | [`segment`] | `seg-<id>.seg` (and the key table of `format/keys.md`) | `format/segment.md` |
//! | [`wal`] | `wal-<id>.log` and its batch payload | `format/wal.md` |
//! | [`shingle_codec`] | a coded shingle set (SHINGLES, WAL inserts) | `format/segment.md` |
//!
//! `codec` is the field encoding they share; [`identity`] what ties a version-3 file to its
//! database; [`vfs`] the file-system trait (with the one
//! `unsafe` block, the mmap, in `mmap`).

pub(crate) mod codec;
pub(crate) mod deletions;
pub mod identity;
pub(crate) mod manifest;
mod mmap;
pub(crate) use mmap::{prefetch_lines, read_ahead, thread_major_faults};
pub(crate) mod names;
pub mod segment;
pub mod shingle_codec;
pub(crate) mod siglog;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod vfs;
pub mod wal;
